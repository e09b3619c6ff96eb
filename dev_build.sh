#!/usr/bin/env bash
# Developer build: compiles recurrent/_C in place (no pip), for quick edit-test loops.
#   ./dev_build.sh            Release build into build/dev
#   BUILD=build/asan CMAKE_ARGS=-DRECURRENT_SANITIZE=ON ./dev_build.sh
set -euo pipefail
cd "$(dirname "$0")"
BUILD=${BUILD:-build/dev}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} ${CMAKE_ARGS:-} >/dev/null
ninja -C "$BUILD" >/dev/null
for f in "$BUILD"/_C*.so; do cp "$f" "recurrent/.$(basename "$f").tmp" && mv -f "recurrent/.$(basename "$f").tmp" "recurrent/$(basename "$f")"; done
