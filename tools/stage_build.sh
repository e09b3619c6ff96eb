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
