#!/usr/bin/env bash
# Runs pytest against a ThreadSanitizer build of recurrent._C, without touching the
# in-place build in recurrent/. The C tests cover the executor under TSan on small step
# nets (tools/sanitize.sh); this covers it as Python drives it: LSTM/GRU cells, training,
# forward-only, failures, interrupts, helping, the min_op_us trial, the state rows.
#
#   tools/tsan_pytest.sh                 the executor's test files (below), minus -m slow
#   tools/tsan_pytest.sh tests/test_executor.py -k helping    any pytest arguments
#
# How: CMake builds the extension with -DRECURRENT_TSAN=ON into $BUILD (default
# build/tsan-py); the Python package is staged in $BUILD/stage/recurrent (the .py files of
# recurrent/ plus the TSan .so); pytest runs from $BUILD/stage so `import recurrent` finds
# the staged copy, with gcc's libtsan preloaded (the TSan runtime must be loaded before
# anything else in a process whose main binary, python, is not instrumented).
#
# Environment:
#   PYTHON      interpreter (default: python3); numpy, pytest and scipy-openblas32 must import.
#               What runs is its sys.executable, never a wrapper: pyenv's `python` shim is a
#               bash script, and bash segfaults with libtsan preloaded (gcc 12, Debian 12).
#   BUILD       build directory (default build/tsan-py)
#   BUILD_TYPE  CMake build type (default RelWithDebInfo: -O3 -g -DNDEBUG). At -O0 (Debug) the
#               helping stress loop (a two-layer LSTM, hidden 256) took 826 s instead of 180 s on
#               2 cores; the other tests cost about the same either way. The price: asserts are
#               off, and the optimiser may merge or drop redundant plain loads and stores, which
#               TSan then does not see. The C tests' TSan build (build/tsan) is Debug.
#   TSAN_OPTIONS   appended to the defaults below
#
# Options we set and why:
#   halt_on_error=1           any report fails the run: the process exits with status 66 after
#                             its first report.
#   log_path=$BUILD/tsan-logs/tsan   reports go to tsan.<pid> files, printed at the end (and the
#                             run fails if there is one). On fd 2 a report can be lost: a test
#                             using capfd has fd 2 redirected into pytest's temporary file when
#                             the process exits, and tests that start a child interpreter (env
#                             knobs, OpenBLAS threads, the stress loops; they inherit LD_PRELOAD
#                             and TSAN_OPTIONS, so they run under TSan too) capture its stderr,
#                             and not all of them check its exit status.
#   second_deadlock_stack=1   a lock-order report shows both acquisitions (as tools/sanitize.sh).
#   allocator_may_return_null=1  as the C tests (tests/c/rc_test.h): a huge request returns NULL
#                             and the core raises MemoryError instead of TSan aborting (for test
#                             files given as arguments that try that).
#   suppressions=tools/sanitizers/tsan.supp   OpenBLAS's own thread pool only; see that file.
# pytest runs under `setarch -R` (ASLR off; the personality is inherited by the children): gcc
# 12's libtsan (older than LLVM 18's, which re-executes itself without ASLR when it must) aborts
# with "FATAL: ThreadSanitizer: unexpected memory mapping" on kernels with more ASLR entropy
# than it supports (vm.mmap_rnd_bits = 32, e.g. Ubuntu 24.04; google/sanitizers#1716). With 28
# bits, as on our machines, it runs with ASLR on too. Where setarch is missing, or the
# personality call is refused (some container seccomp profiles), the run goes on with ASLR on
# and says so.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PYTHON=${PYTHON:-python3}
BUILD=${BUILD:-build/tsan-py}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac

# the real interpreter (see PYTHON above); also what the tests' children run (sys.executable)
PYEXE=$("$PYTHON" -c 'import sys; print(sys.executable)')
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DRECURRENT_TSAN=ON \
    -DRECURRENT_SANITIZE=OFF -DRECURRENT_BUILD_PYTHON=ON -DPython_EXECUTABLE="$PYEXE" >/dev/null
ninja -C "$BUILD" >/dev/null

STAGE="$BUILD/stage"
rm -rf "$STAGE"
mkdir -p "$STAGE"
# the package's Python files (and any data) as they are in the tree, never a stale .so
(cd "$ROOT" && find recurrent -path '*/__pycache__' -prune -o -type f ! -name '*.so' -print) |
    while read -r f; do mkdir -p "$STAGE/$(dirname "$f")"; cp "$ROOT/$f" "$STAGE/$f"; done
cp "$BUILD"/_C*.so "$STAGE/recurrent/"

LIBTSAN=$(${CC:-gcc} -print-file-name=libtsan.so)
if [ ! -e "$LIBTSAN" ]; then
    echo "tsan_pytest: libtsan.so not found (gcc -print-file-name=libtsan.so gave '$LIBTSAN')" >&2
    exit 2
fi
LOGDIR="$BUILD/tsan-logs"
rm -rf "$LOGDIR"
mkdir -p "$LOGDIR"
SUPP_ARGS=""
[ -s "$ROOT/tools/sanitizers/tsan.supp" ] && SUPP_ARGS=":suppressions=$ROOT/tools/sanitizers/tsan.supp"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:allocator_may_return_null=1:log_path=$LOGDIR/tsan${SUPP_ARGS}${TSAN_OPTIONS:+:$TSAN_OPTIONS}"

NOASLR=()
if command -v setarch >/dev/null 2>&1 && setarch "$(uname -m)" -R true 2>/dev/null; then
    NOASLR=(setarch "$(uname -m)" -R)
else
    echo "tsan_pytest: setarch -R unavailable; running with ASLR on (TSan may fail to map its shadow)" >&2
fi

if [ $# -eq 0 ]; then
    # All of these files, minus -m slow: 5-5.5 minutes on 2 shared cores (RelWithDebInfo; 3 of
    # them test_stress_helping_bitwise), plus 20-40 s to build.
    set -- "$ROOT/tests/test_executor.py" "$ROOT/tests/test_executor_stress.py" \
        "$ROOT/tests/test_executor_help.py" "$ROOT/tests/test_executor_auto.py" \
        "$ROOT/tests/test_state_rows.py" -m "not slow"
else
    # make relative test paths absolute (pytest runs from the stage directory)
    args=()
    for a in "$@"; do
        if [[ "$a" != -* && -e "$ROOT/${a%%::*}" ]]; then args+=("$ROOT/$a"); else args+=("$a"); fi
    done
    set -- "${args[@]}"
fi
cd "$STAGE"
"${NOASLR[@]}" env LD_PRELOAD="$LIBTSAN${LD_PRELOAD:+:$LD_PRELOAD}" "$PYEXE" -c '
import recurrent, sys
assert recurrent.__file__.startswith(sys.argv[1]), "imported " + recurrent.__file__ + ", not the staged copy"
assert "libtsan" in open("/proc/self/maps").read(), "the TSan runtime is not loaded"
' "$STAGE"
# -p no:cacheprovider: nothing written into the source tree; --rootdir keeps setup.cfg's settings.
# pytest's own fd-level capture stays on (tools/asan_pytest.sh needs --capture=sys so a report on
# fd 2 is not swallowed; here reports go to log_path instead).
rc=0
"${NOASLR[@]}" env LD_PRELOAD="$LIBTSAN${LD_PRELOAD:+:$LD_PRELOAD}" "$PYEXE" -m pytest -q \
    -p no:cacheprovider --rootdir "$ROOT" "$@" || rc=$?
# the reports (log_path above), of this process and of the children the tests started
shopt -s nullglob
reports=("$LOGDIR"/tsan.*)
if [ ${#reports[@]} -gt 0 ]; then
    for f in "${reports[@]}"; do echo "== $f"; cat "$f"; done >&2
    echo "tsan_pytest: ThreadSanitizer reported (${#reports[@]} process(es); pytest exit status $rc)" >&2
    [ "$rc" -ne 0 ] || rc=1
fi
exit "$rc"
