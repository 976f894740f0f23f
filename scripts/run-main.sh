#!/usr/bin/env bash
# Installs dependencies, builds the release binary and runs the main job: text
# generation with the model given as arguments, or the built-in demo model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target edge-infer
if [ $# -eq 0 ]; then
  exec ./build/release/edge-infer generate -p "Once upon a time" -n 32
fi
exec ./build/release/edge-infer "$@"
