#!/usr/bin/env bash
# Installs dependencies, builds the release binary and runs the main job: the
# OpenAI-compatible server on http://127.0.0.1:8080 serving the built-in demo model (or the
# subcommand given as arguments, e.g. `serve -m MODEL.gguf` or `generate -p TEXT`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target edge-infer
if [ $# -eq 0 ]; then
  exec ./build/release/edge-infer serve --port "${EDGE_PORT:-8080}"
fi
exec ./build/release/edge-infer "$@"
