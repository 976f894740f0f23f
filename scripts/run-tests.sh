#!/usr/bin/env bash
# Installs dependencies, builds the release preset and runs every test with CTest.
# EDGE_ASAN=1 also builds and runs the whole suite under AddressSanitizer+UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --tests
JOBS=$(nproc)

run_preset() {
  local preset=$1
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$JOBS"
  ctest --preset "$preset" -j "$JOBS" --timeout 900
}

run_preset release
if [ "${EDGE_ASAN:-0}" = 1 ]; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 run_preset asan
fi
