#!/usr/bin/env bash
# Runs pytest against an ASan+UBSan build of recurrent._C, without touching the
# in-place build in recurrent/.
#
#   tools/asan_pytest.sh                 the whole suite (tests/), minus -m slow
#   tools/asan_pytest.sh tests/test_ops_math.py -k FC    any pytest arguments
#
# How: CMake builds the extension with -DRECURRENT_SANITIZE=ON into
# $BUILD (default build/asan-py), with allocation-failure injection
# (-DRECURRENT_ALLOC_FAIL=ON, for tests/test_alloc_fail.py); the Python package is staged in
# $BUILD/stage/recurrent (the .py files of recurrent/ plus the sanitized .so);
# pytest runs from $BUILD/stage so `import recurrent` finds the staged copy,
# with gcc's libasan preloaded (the ASan runtime must be loaded before
# anything else in a process whose main binary, python, is not instrumented).
#
# Environment:
#   PYTHON      interpreter (default: python3); numpy, pytest and scipy-openblas32 must import
#   BUILD       build directory (default build/asan-py)
#   BUILD_TYPE  CMake build type (default Debug: -O0 -g, best reports)
#   ASAN_OPTIONS / UBSAN_OPTIONS   appended to the defaults below
#
# Options we set and why:
#   detect_leaks=0            CPython and NumPy keep allocations alive until exit by design
#                             (interned objects, module state); LeakSanitizer would report
#                             those, not ours. Our own leaks are checked by the C tests
#                             (tests/c, LSan on) and by the RSS tests.
#   allocator_may_return_null=1  the huge-allocation tests expect malloc to fail and the core
#                             to raise MemoryError; by default ASan aborts on such requests.
#   halt_on_error=1, abort_on_error=1  any report fails the run (the test process dies).
#   UBSan: -fno-sanitize-recover=undefined (CMake) aborts on the first report;
#          print_stacktrace=1 says where.
#   log_path=$BUILD/sanitizer-logs/sanitizer (both)   reports go to sanitizer.<pid> files,
#                             printed at the end, and the run fails if one holds a report. On
#                             fd 2 a report can be lost: a test that captures a child
#                             interpreter's stderr (the env-knob, OpenBLAS-thread and stress
#                             tests; children inherit LD_PRELOAD and the options) may show only
#                             its exit status, and a test using capfd has fd 2 redirected into
#                             pytest's temporary file when the process aborts.
# No suppressions are needed at present; if third-party code ever needs one, put
# it in tools/sanitizers/asan.supp / ubsan.supp with a reason on the line above.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PYTHON=${PYTHON:-python3}
BUILD=${BUILD:-build/asan-py}
BUILD_TYPE=${BUILD_TYPE:-Debug}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac

PYEXE=$("$PYTHON" -c 'import sys; print(sys.executable)')
# RECURRENT_ALLOC_FAIL: tests/test_alloc_fail.py makes allocations fail one by one (skipped elsewhere)
. "$ROOT/tools/stage_build.sh"
stage_build "$ROOT" "$BUILD" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DRECURRENT_SANITIZE=ON \
    -DRECURRENT_ALLOC_FAIL=ON -DRECURRENT_BUILD_PYTHON=ON -DPython_EXECUTABLE="$PYEXE"

sanitizer_runtime asan asan_pytest
LIBASAN=$RUNTIME
# C++ extensions loaded later (matplotlib's) throw exceptions through ASan's __cxa_throw
# interceptor, which finds the real one only if libstdc++ is loaded when ASan starts.
LIBSTDCXX=$(${CC:-gcc} -print-file-name=libstdc++.so.6)
[ -e "$LIBSTDCXX" ] && LIBASAN="$LIBASAN:$LIBSTDCXX"
LOGDIR="$BUILD/sanitizer-logs"
fresh_log_dir "$LOGDIR"
suppressions_option "$ROOT/tools/sanitizers/asan.supp"
export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:halt_on_error=1:abort_on_error=1:log_path=$LOGDIR/sanitizer${SUPP}${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
suppressions_option "$ROOT/tools/sanitizers/ubsan.supp"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$LOGDIR/sanitizer${SUPP}${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

if [ $# -eq 0 ]; then
    set -- "$ROOT/tests" -m "not slow"
else
    absolute_test_args "$ROOT" "$@"
    set -- "${TEST_ARGS[@]}"
fi
cd "$STAGE"
# -p no:cacheprovider: nothing written into the source tree; --rootdir keeps setup.cfg's settings;
# --capture=sys: anything the runtime still writes to fd 2 (an error before log_path applies)
# reaches the terminal instead of pytest's capture file.
check_staged "$STAGE" libasan env LD_PRELOAD="$LIBASAN${LD_PRELOAD:+:$LD_PRELOAD}" "$PYTHON"
rc=0
env LD_PRELOAD="$LIBASAN${LD_PRELOAD:+:$LD_PRELOAD}" "$PYTHON" -m pytest -q -p no:cacheprovider \
    --capture=sys --rootdir "$ROOT" "$@" || rc=$?
# the log files (log_path above), of this process and of the children the tests started. A report
# (an ASan/LSan error, a UBSan runtime error) is printed and fails the run. Other files hold only
# warnings, counted, not printed: allocator_may_return_null=1 notes every huge allocation that
# fails ("WARNING: AddressSanitizer failed to allocate 0x40000000040 bytes", hundreds of them from
# the tests that make allocations fail on purpose).
shopt -s nullglob
logs=("$LOGDIR"/sanitizer.*)
reports=0
warned=0
for f in "${logs[@]}"; do
    if grep -q -E "ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: (Address|Undefined|Leak)" "$f"; then
        echo "== $f" >&2
        cat "$f" >&2
        reports=$((reports + 1))
    else
        warned=$((warned + 1))
    fi
done
if [ "$warned" -gt 0 ]; then
    echo "asan_pytest: $warned process(es) left warnings only (not reports): $LOGDIR" >&2
fi
if [ "$reports" -gt 0 ]; then
    echo "asan_pytest: the sanitizers reported ($reports process(es); pytest exit status $rc)" >&2
    [ "$rc" -ne 0 ] || rc=1
fi
exit "$rc"
