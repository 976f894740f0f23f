#!/bin/sh
# The models of the MoE conformance test (tests/e2e/moe_conformance_test.cpp runs the same
# commands): a Qwen3-MoE and a GPT-OSS of random weights, F32, fixed seeds, every dimension a
# multiple of 16 (stacked experts pack on panel boundaries).
# Usage: sh make_models.sh OUTDIR [EDGE_INFER]
set -e
out=$1
bin=${2:-build/release/edge-infer}
mkdir -p "$out"
"$bin" make-model --arch qwen3moe --layers 3 --dim 64 --heads 4 --kv-heads 2 --head-dim 16 --ffn 128 \
  --experts 8 --experts-used 3 --expert-ffn 32 --vocab 512 --seed 21 -o "$out/qwen3moe.gguf"
"$bin" make-model --arch gpt-oss --layers 4 --dim 64 --heads 8 --kv-heads 2 --head-dim 16 --ffn 128 \
  --experts 8 --experts-used 2 --expert-ffn 32 --vocab 512 --sliding-window 8 --seed 22 -o "$out/gpt_oss.gguf"
