# Sourced (not run) by tools/asan_pytest.sh, tools/tsan_pytest.sh and fuzz/run_fuzz.sh: the
# build-and-stage step they share, so that an instrumented build of recurrent._C is imported
# without touching the in-place build in recurrent/.
#
#   stage_build ROOT BUILD [CMAKE_ARGS...]
#       configures ROOT with CMake (Ninja) into BUILD with the given arguments, builds it, and
#       stages the package in BUILD/stage/recurrent: the .py files (and any data) of recurrent/
#       as they are in the tree, never a stale .so, plus the freshly built _C*.so. Sets STAGE.
#   absolute_test_args ROOT ARGS...
#       pytest runs from the stage directory: relative test paths that exist under ROOT become
#       absolute (a node id's "::..." part is kept); options pass through. Sets TEST_ARGS.
#   sanitizer_runtime NAME CALLER
#       the path of gcc's (or $CC's) libNAME.so in RUNTIME; exits 2 with a message naming CALLER
#       when the compiler has none.
#   suppressions_option FILE
#       sets SUPP to ":suppressions=FILE" (a *SAN_OPTIONS entry) when FILE is not empty, else "".
#   fresh_log_dir DIR
#       empties DIR (the sanitizer reports of an earlier run are not counted again).
#   check_staged STAGE RUNTIME_NAME COMMAND...
#       COMMAND (an interpreter, with whatever env/setarch prefix the run uses) imports the staged
#       copy of recurrent, not another one, with the runtime (e.g. libasan) loaded; else it fails.

stage_build() {
    local root=$1 build=$2
    shift 2
    cmake -S "$root" -B "$build" -G Ninja "$@" >/dev/null
    ninja -C "$build" >/dev/null
    STAGE="$build/stage"
    rm -rf "$STAGE"
    mkdir -p "$STAGE"
    (cd "$root" && find recurrent -path '*/__pycache__' -prune -o -type f ! -name '*.so' -print) |
        while read -r f; do mkdir -p "$STAGE/$(dirname "$f")"; cp "$root/$f" "$STAGE/$f"; done
    cp "$build"/_C*.so "$STAGE/recurrent/"
}

absolute_test_args() {
    local root=$1 a
    shift
    TEST_ARGS=()
    for a in "$@"; do
        if [[ "$a" != -* && -e "$root/${a%%::*}" ]]; then TEST_ARGS+=("$root/$a"); else TEST_ARGS+=("$a"); fi
    done
}

sanitizer_runtime() {
    RUNTIME=$(${CC:-gcc} -print-file-name="lib$1.so")
    if [ ! -e "$RUNTIME" ]; then
        echo "$2: lib$1.so not found (${CC:-gcc} -print-file-name=lib$1.so gave '$RUNTIME')" >&2
        exit 2
    fi
}

suppressions_option() {
    SUPP=""
    if [ -s "$1" ]; then SUPP=":suppressions=$1"; fi
}

fresh_log_dir() {
    rm -rf "$1"
    mkdir -p "$1"
}

check_staged() {
    local stage=$1 runtime=$2
    shift 2
    "$@" -c '
import recurrent, sys
assert recurrent.__file__.startswith(sys.argv[1]), "imported " + recurrent.__file__ + ", not the staged copy"
assert sys.argv[2] in open("/proc/self/maps").read(), "the " + sys.argv[2] + " runtime is not loaded"
' "$stage" "$runtime"
}
