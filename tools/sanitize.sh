#!/usr/bin/env bash
# Sanitizer runs of recurrent (DESIGN.md §5: the core is clean under ASan/UBSan,
# the executor under TSan). Zero reports is the pass criterion: every
# sanitizer is configured to abort on its first report.
#
#   tools/sanitize.sh           C tests under ASan+UBSan and under TSan, then the whole
#                               pytest suite (minus -m slow) under ASan+UBSan, then the
#                               executor's pytest files under TSan
#   tools/sanitize.sh --fast    the same C tests, then a fast pytest subset under ASan, then
#                               the same executor files under TSan (what .ci/run uses; about
#                               25 minutes on 2 shared cores, the TSan pytest step 5-6 of them)
#   tools/sanitize.sh --c-only  only the C tests
#
# Environment: PYTHON (default python3) must import numpy, pytest and
# scipy-openblas32 (CMake asks it where OpenBLAS is). Build trees:
# build/asan (C, ASan+UBSan), build/tsan (C, TSan), build/asan-py (extension, ASan+UBSan),
# build/tsan-py (extension, TSan; see tools/tsan_pytest.sh).
# C tests run with LeakSanitizer on (ASan's default): a leak in the core fails them.
# pytest runs with detect_leaks=0 (CPython's own allocations), see tools/asan_pytest.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
MODE=full
case "${1:-}" in
    --fast) MODE=fast; shift ;;
    --c-only) MODE=c; shift ;;
    "") ;;
    *) echo "usage: tools/sanitize.sh [--fast|--c-only]" >&2; exit 2 ;;
esac
PYTHON=${PYTHON:-python3}
PYEXE=$("$PYTHON" -c 'import sys; print(sys.executable)')
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

ctest_build() { # name, extra cmake args...
    local dir="build/$1"; shift
    echo "== C tests: $dir ($*)"
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DRECURRENT_BUILD_CTESTS=ON -DRECURRENT_BUILD_PYTHON=OFF \
        -DPython_EXECUTABLE="$PYEXE" "$@" >/dev/null
    ninja -C "$dir" >/dev/null
    ctest --test-dir "$dir" --output-on-failure -j "$JOBS" --timeout 600
}

export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
# ASan: leaks on (the default) for the C tests; the test binaries also set allocator_may_return_null=1.
ASAN_OPTIONS="halt_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" ctest_build asan -DRECURRENT_SANITIZE=ON -DRECURRENT_TSAN=OFF
# TSan: the threaded tests (refcounts, concurrent nets, the RNN executor) are what matter; all run.
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}" \
    ctest_build tsan -DRECURRENT_TSAN=ON -DRECURRENT_SANITIZE=OFF

[ "$MODE" = c ] && { echo "sanitize: C tests clean"; exit 0; }

echo "== pytest under ASan+UBSan ($MODE)"
if [ "$MODE" = fast ]; then
    # not slow, not notebooks / benchmarks / demos (minutes under ASan, mostly third-party
    # code we do not instrument); stop at the first failure
    PYTHON="$PYTHON" tools/asan_pytest.sh "$ROOT/tests" -x -m "not slow" \
        -k "not notebook and not benchmark and not demo"
else
    PYTHON="$PYTHON" tools/asan_pytest.sh "$ROOT/tests" -m "not slow"
fi
# The executor on the nets Python builds (LSTM/GRU layers, training, forward-only, failures,
# interrupts, helping, the stress loops; the C tests run it on small hand-built step nets), and
# the binding's threads (workspaces, background plans, Python ops, queues, Mutex, counters):
# tools/tsan_pytest.sh's default files, minus -m slow.
echo "== pytest under TSan (the executor's files and the binding's threaded ones)"
PYTHON="$PYTHON" tools/tsan_pytest.sh
echo "sanitize: all clean"
