#!/bin/sh
# The model of the hybrid (Gated DeltaNet + attention) conformance test
# (tests/e2e/hybrid_conformance_test.cpp runs the same command): a Qwen3.5 of random
# weights, F32, fixed seed, 8 layers (6 DeltaNet, 2 gated attention), 4 value heads over 2
# key heads so the head map matters.
# Usage: sh make_models.sh OUTDIR [EDGE_INFER]
set -e
out=$1
bin=${2:-build/release/edge-infer}
mkdir -p "$out"
"$bin" make-model --arch qwen35 --layers 8 --dim 64 --heads 4 --kv-heads 2 --head-dim 32 --ffn 128 \
  --vocab 512 --seed 31 -o "$out/qwen35.gguf"
# Qwen3.5-MoE: the same hybrid layers with 8 experts (3 used, width 32) and a gated shared
# expert of width 32 per layer.
"$bin" make-model --arch qwen35moe --layers 4 --dim 64 --heads 4 --kv-heads 2 --head-dim 32 --ffn 128 \
  --experts 8 --experts-used 3 --expert-ffn 32 --vocab 512 --seed 32 -o "$out/qwen35moe.gguf"
# Qwen3-Next: the MoE hybrid with fused ssm_in / ssm_ba projections (value heads grouped),
# plain RoPE; 8 experts (2 used, width 32) and a gated shared expert of width 32.
"$bin" make-model --arch qwen3next --layers 4 --dim 64 --heads 4 --kv-heads 2 --head-dim 32 --ffn 128 \
  --experts 8 --experts-used 2 --expert-ffn 32 --vocab 512 --seed 33 -o "$out/qwen3next.gguf"
