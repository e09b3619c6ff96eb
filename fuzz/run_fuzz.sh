#!/usr/bin/env bash
# Bounded fuzz run of recurrent (atheris + libFuzzer): the protobuf text format,
# random operators, RecurrentNetwork link/alias arguments and Load's minidb reader. See fuzz/README.md.
#
#   fuzz/run_fuzz.sh [SECONDS]      total time, split evenly over the targets (default 60)
#
# Exit status: 0 when no target found anything; 1 when a target crashed (segfault,
# abort, sanitizer report, an exception the API does not document, a timeout or
# running out of memory) -- the input is saved under $FUZZ_WORK/artifacts and
# replays with `python fuzz/fuzz_<target>.py --replay FILE`; 2 on a set-up error.
#
# Environment:
#   PYTHON             interpreter (default python3). It must import recurrent: the
#                      checkout's in-place build (./dev_build.sh) or an installed package.
#                      atheris is installed into it with pip when missing.
#   FUZZ_TARGETS       default "text_format ops rnn minidb image"
#   FUZZ_WORK          scratch directory (default build/fuzz-run): the growing corpus,
#                      artifacts, logs. Keeping it between runs keeps the corpus.
#   FUZZ_INSTRUMENTED  1: build the extension with clang, SanitizerCoverage (so
#                      libFuzzer is guided by C coverage too) and ASan+UBSan, and fuzz
#                      that build (needs clang; much better at finding C bugs, ~3x
#                      slower per input). Default 0: the build PYTHON imports, guided
#                      by Python coverage only.
#   FUZZ_JOBS          parallel fuzzing processes per target (default 1)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
TOTAL=${1:-60}
PYTHON=${PYTHON:-python3}
TARGETS=${FUZZ_TARGETS:-text_format ops rnn minidb image}
WORK=${FUZZ_WORK:-$ROOT/build/fuzz-run}
INSTR=${FUZZ_INSTRUMENTED:-0}
JOBS=${FUZZ_JOBS:-1}
case "$WORK" in /*) ;; *) WORK="$ROOT/$WORK" ;; esac
mkdir -p "$WORK/artifacts" "$WORK/logs"
# findings of an earlier run are kept aside, not counted again
if compgen -G "$WORK/artifacts/*" >/dev/null; then
    mkdir -p "$WORK/artifacts-previous"
    mv "$WORK"/artifacts/* "$WORK/artifacts-previous/"
fi

if ! "$PYTHON" -c "import atheris" 2>/dev/null; then
    echo "run_fuzz: installing atheris into $("$PYTHON" -c 'import sys; print(sys.prefix)')"
    "$PYTHON" -m pip install -q atheris || { echo "run_fuzz: pip install atheris failed" >&2; exit 2; }
fi

ENVV=()
if [ "$INSTR" = 1 ]; then
    command -v clang >/dev/null || { echo "run_fuzz: FUZZ_INSTRUMENTED=1 needs clang" >&2; exit 2; }
    BUILD="$WORK/build"
    PYEXE=$("$PYTHON" -c 'import sys; print(sys.executable)')
    echo "run_fuzz: building the instrumented extension in $BUILD (clang, -fsanitize=fuzzer-no-link, ASan+UBSan)"
    . "$ROOT/tools/stage_build.sh"
    stage_build "$ROOT" "$BUILD" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DRECURRENT_SANITIZE=ON -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link" -DPython_EXECUTABLE="$PYEXE"
    ATHERIS=$("$PYTHON" -c 'import atheris; print(atheris.path())')
    # atheris's libFuzzer + ASan runtime must be loaded first; allocations over 1 GB
    # fail (MemoryError) instead of being reported as out-of-memory (or being slow)
    ENVV=(FUZZ_INSTALLED=1 PYTHONPATH="$STAGE${PYTHONPATH:+:$PYTHONPATH}"
          LD_PRELOAD="$ATHERIS/asan_with_fuzzer.so"
          ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:max_allocation_size_mb=1024:halt_on_error=1"
          UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
fi
(cd "$ROOT/fuzz" && env "${ENVV[@]}" "$PYTHON" -c 'import sys; sys.argv.append("--replay"); import common, recurrent
print("run_fuzz: recurrent from", recurrent.__file__)') \
    || { echo "run_fuzz: $PYTHON cannot import recurrent (run ./dev_build.sh or pip install .)" >&2; exit 2; }

set -- $TARGETS
PER=$(( TOTAL / $# ))
[ "$PER" -ge 5 ] || PER=5
# the end of a log without libFuzzer's progress lines
show_log() { grep -v -E "^#[0-9]+ +(NEW|REDUCE|pulse|RELOAD)|^INFO: Instrumenting" "$1" | tail -40; }
status=0
for t in "$@"; do
    corpus="$WORK/corpus/$t"
    mkdir -p "$corpus"
    flags=(-max_total_time="$PER" -timeout=30 -rss_limit_mb=6144 -malloc_limit_mb=4096 -print_final_stats=1
           -artifact_prefix="$WORK/artifacts/$t-")
    [ "$t" = text_format ] && flags+=(-dict="$ROOT/fuzz/text_format.dict" -max_len=16384)
    [ "$t" != text_format ] && flags+=(-max_len=512 -len_control=50)
    [ "$JOBS" -gt 1 ] && flags+=(-jobs="$JOBS" -workers="$JOBS")
    # the text format is pure Python: the instrumented C build adds nothing there
    tenv=("${ENVV[@]}")
    [ "$t" = text_format ] && tenv=()
    echo "run_fuzz: $t for ${PER}s (corpus $corpus + fuzz/corpus/$t)"
    # the committed seeds (fuzz/corpus/<t>) are read; new inputs go to $corpus
    seeds=()
    [ -d "$ROOT/fuzz/corpus/$t" ] && seeds=("$ROOT/fuzz/corpus/$t")  # a target may have no committed seeds
    # run from the logs folder: with FUZZ_JOBS > 1 libFuzzer writes each job's log
    # there as fuzz-<job>.log
    rm -f "$WORK/logs"/fuzz-*.log
    if (cd "$WORK/logs" && env "${tenv[@]}" "$PYTHON" "$ROOT/fuzz/fuzz_$t.py" "${flags[@]}" "$corpus" "${seeds[@]}") \
            > "$WORK/logs/$t.log" 2>&1; then
        grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|Done )" "$WORK/logs/$t.log" | tail -2 || true
    else
        status=1
        echo "run_fuzz: $t FOUND A PROBLEM (log $WORK/logs/$t.log):"
        show_log "$WORK/logs/$t.log"
        for j in "$WORK/logs"/fuzz-*.log; do
            [ -f "$j" ] || continue
            grep -q -E "ERROR|Traceback|==[0-9]+==" "$j" || continue
            echo "run_fuzz: $t job log $j:"
            show_log "$j"
        done
    fi
done
shopt -s nullglob
found=("$WORK"/artifacts/*)
if [ ${#found[@]} -gt 0 ]; then
    echo "run_fuzz: inputs that failed (replay: python fuzz/fuzz_<target>.py --replay FILE):"
    printf '  %s\n' "${found[@]}"
    status=1
fi
[ "$status" = 0 ] && echo "run_fuzz: no findings in ${TOTAL}s"
exit $status
