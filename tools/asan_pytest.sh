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
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DRECURRENT_SANITIZE=ON \
    -DRECURRENT_ALLOC_FAIL=ON -DRECURRENT_BUILD_PYTHON=ON -DPython_EXECUTABLE="$PYEXE" >/dev/null
ninja -C "$BUILD" >/dev/null

STAGE="$BUILD/stage"
rm -rf "$STAGE"
mkdir -p "$STAGE"
# the package's Python files (and any data) as they are in the tree, never a stale .so
(cd "$ROOT" && find recurrent -path '*/__pycache__' -prune -o -type f ! -name '*.so' -print) |
    while read -r f; do mkdir -p "$STAGE/$(dirname "$f")"; cp "$ROOT/$f" "$STAGE/$f"; done
cp "$BUILD"/_C*.so "$STAGE/recurrent/"

LIBASAN=$(${CC:-gcc} -print-file-name=libasan.so)
if [ ! -e "$LIBASAN" ]; then
    echo "asan_pytest: libasan.so not found (gcc -print-file-name=libasan.so gave '$LIBASAN')" >&2
    exit 2
fi
# C++ extensions loaded later (matplotlib's) throw exceptions through ASan's __cxa_throw
# interceptor, which finds the real one only if libstdc++ is loaded when ASan starts.
LIBSTDCXX=$(${CC:-gcc} -print-file-name=libstdc++.so.6)
[ -e "$LIBSTDCXX" ] && LIBASAN="$LIBASAN:$LIBSTDCXX"
SUPP_ARGS=""
[ -s "$ROOT/tools/sanitizers/asan.supp" ] && SUPP_ARGS=":suppressions=$ROOT/tools/sanitizers/asan.supp"
export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:halt_on_error=1:abort_on_error=1${SUPP_ARGS}${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
UB_SUPP=""
[ -s "$ROOT/tools/sanitizers/ubsan.supp" ] && UB_SUPP=":suppressions=$ROOT/tools/sanitizers/ubsan.supp"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UB_SUPP}${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

if [ $# -eq 0 ]; then
    set -- "$ROOT/tests" -m "not slow"
else
    # make relative test paths absolute (pytest runs from the stage directory)
    args=()
    for a in "$@"; do
        if [[ "$a" != -* && -e "$ROOT/${a%%::*}" ]]; then args+=("$ROOT/$a"); else args+=("$a"); fi
    done
    set -- "${args[@]}"
fi
cd "$STAGE"
# -p no:cacheprovider: nothing written into the source tree; --rootdir keeps setup.cfg's settings;
# --capture=sys: pytest's default fd-level capture would swallow a sanitizer report (written to
# fd 2 just before the process aborts); with sys-level capture it reaches the terminal.
LD_PRELOAD="$LIBASAN${LD_PRELOAD:+:$LD_PRELOAD}" "$PYTHON" -c '
import recurrent, sys
assert recurrent.__file__.startswith(sys.argv[1]), "imported " + recurrent.__file__ + ", not the staged copy"
assert "libasan" in open("/proc/self/maps").read(), "the ASan runtime is not loaded"
' "$STAGE"
exec env LD_PRELOAD="$LIBASAN${LD_PRELOAD:+:$LD_PRELOAD}" "$PYTHON" -m pytest -q -p no:cacheprovider \
    --capture=sys --rootdir "$ROOT" "$@"
