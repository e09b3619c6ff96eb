#!/usr/bin/env bash
# Runs pytest against a ThreadSanitizer build of recurrent._C, without touching the
# in-place build in recurrent/. The C tests cover the executor under TSan on small step
# nets (tools/sanitize.sh); this covers it as Python drives it: LSTM/GRU cells, training,
# forward-only, failures, interrupts, helping, the min_op_us trial, the state rows; and the
# other code where threads meet: workspaces used from several threads, background plans,
# Python ops, the blocking queues, Mutex and counter ops, interpreter shutdown.
#
#   tools/tsan_pytest.sh                 the test files below, minus -m slow
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
#   intercept_tls_get_addr=0  gcc 12's libtsan turns this on and then guesses the extent of every
#                             new dynamic TLS block (a dlopen-ed module's __thread variables, e.g.
#                             ours, in each new thread): a block at an address 16 bytes past a page
#                             is taken for glibc 2.19's layout, and 16 bytes of heap before it are
#                             read as its start and size. With garbage there the runtime dies
#                             clearing a bogus range ("ThreadSanitizer failed to allocate
#                             0x1ec100001b000 (...) bytes at address 10000000d000 (errno: 12)"):
#                             one new block in 256 gets such an address, and the stress loops start
#                             hundreds of threads (134 new blocks in one child: a 41% chance).
#                             LLVM's later runtimes ask the allocator instead. Off, nothing is lost:
#                             glibc allocates those blocks with malloc, which TSan intercepts.
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
. "$ROOT/tools/stage_build.sh"
stage_build "$ROOT" "$BUILD" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DRECURRENT_TSAN=ON \
    -DRECURRENT_SANITIZE=OFF -DRECURRENT_BUILD_PYTHON=ON -DPython_EXECUTABLE="$PYEXE"

sanitizer_runtime tsan tsan_pytest
LIBTSAN=$RUNTIME
LOGDIR="$BUILD/tsan-logs"
fresh_log_dir "$LOGDIR"
suppressions_option "$ROOT/tools/sanitizers/tsan.supp"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:allocator_may_return_null=1:intercept_tls_get_addr=0:log_path=$LOGDIR/tsan${SUPP}${TSAN_OPTIONS:+:$TSAN_OPTIONS}"

NOASLR=()
if command -v setarch >/dev/null 2>&1 && setarch "$(uname -m)" -R true 2>/dev/null; then
    NOASLR=(setarch "$(uname -m)" -R)
else
    echo "tsan_pytest: setarch -R unavailable; running with ASLR on (TSan may fail to map its shadow)" >&2
fi

if [ $# -eq 0 ]; then
    # All of these files, minus -m slow: about 6.5 minutes on 2 cores (RelWithDebInfo; 3 of them
    # test_stress_helping_bitwise, 50 s the files after test_state_rows.py), plus 20-40 s to
    # build. Not test_fork.py (TSan dies on a thread started after a multi-threaded fork) nor
    # test_interrupt.py (its latency bounds, and its children's time limits sized for sequences
    # of 150k steps, do not hold under TSan).
    set -- "$ROOT/tests/test_executor.py" "$ROOT/tests/test_executor_stress.py" \
        "$ROOT/tests/test_executor_help.py" "$ROOT/tests/test_executor_auto.py" \
        "$ROOT/tests/test_state_rows.py" "$ROOT/tests/test_workspace_threads.py" \
        "$ROOT/tests/test_plan_background.py" "$ROOT/tests/test_plan.py" \
        "$ROOT/tests/test_python_op.py" "$ROOT/tests/test_shutdown.py" \
        "$ROOT/tests/test_ops_queue.py" "$ROOT/tests/test_ops_queue_weighted.py" \
        "$ROOT/tests/test_ops_rebatching_queue.py" "$ROOT/tests/test_ops_mutex.py" \
        "$ROOT/tests/test_ops_counter.py" -m "not slow"
else
    absolute_test_args "$ROOT" "$@"
    set -- "${TEST_ARGS[@]}"
fi
cd "$STAGE"
check_staged "$STAGE" libtsan "${NOASLR[@]}" env LD_PRELOAD="$LIBTSAN${LD_PRELOAD:+:$LD_PRELOAD}" "$PYEXE"
# --rootdir keeps setup.cfg's settings. pytest's own fd-level capture stays on (reports go to
# log_path).
# The pytest cache (for --lf below) lives in $BUILD, never in the source tree.
CACHE="$BUILD/pytest-cache"
rm -rf "$CACHE"
run_pytest() {
    "${NOASLR[@]}" env LD_PRELOAD="$LIBTSAN${LD_PRELOAD:+:$LD_PRELOAD}" "$PYEXE" -m pytest -q \
        -o cache_dir="$CACHE" --rootdir "$ROOT" "$@"
}
# A log file is a report when it has a report's header ("WARNING: ThreadSanitizer: data race",
# "ERROR: ThreadSanitizer: SEGV ..."); anything else is the runtime failing by itself (as it did
# before intercept_tls_get_addr=0 above, in CI and here).
is_report() { grep -q -E "(WARNING|ERROR): ThreadSanitizer:|SUMMARY: ThreadSanitizer" "$1"; }
shopt -s nullglob
rc=0
run_pytest "$@" || rc=$?
logs=("$LOGDIR"/tsan.*)
nreports=0
for f in "${logs[@]}"; do is_report "$f" && nreports=$((nreports + 1)); done
if [ ${#logs[@]} -gt 0 ] && [ "$nreports" -eq 0 ]; then
    # Only runtime failures: shown, kept in $LOGDIR/runtime-failures, and the failed tests (all of
    # them if the dying process was pytest itself) run once more. A report, or a second failure
    # of any kind, fails the run.
    for f in "${logs[@]}"; do echo "== $f"; cat "$f"; done >&2
    echo "tsan_pytest: ThreadSanitizer's runtime failed (${#logs[@]} process(es); no race report;" \
        "pytest exit status $rc): running the failed tests again" >&2
    mkdir -p "$LOGDIR/runtime-failures"
    mv "${logs[@]}" "$LOGDIR/runtime-failures/"
    rc=0
    run_pytest --lf "$@" || rc=$?
    logs=("$LOGDIR"/tsan.*)
fi
# the reports (log_path above), of this process and of the children the tests started
if [ ${#logs[@]} -gt 0 ]; then
    for f in "${logs[@]}"; do echo "== $f"; cat "$f"; done >&2
    nreports=0
    for f in "${logs[@]}"; do is_report "$f" && nreports=$((nreports + 1)); done
    echo "tsan_pytest: ThreadSanitizer reported in $nreports process(es), its runtime failed in" \
        "$((${#logs[@]} - nreports)) (pytest exit status $rc)" >&2
    [ "$rc" -ne 0 ] || rc=1
fi
exit "$rc"
