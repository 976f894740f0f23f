#!/bin/sh
# The model pairs of the mtmd conformance test (tests/e2e/mtmd_conformance_test.cpp runs the
# same commands): a Gemma-3 LM with a gemma3 projector, a Llama LM with an mlp projector,
# F32, fixed seeds. The Gemma-3 LM has 6 layers: ik_llama.cpp fixes the pattern at 5 sliding
# + 1 global, and with no global layer its graph leaves the global mask unallocated (abort).
# Usage: sh make_models.sh OUTDIR [EDGE_INFER]
set -e
out=$1
bin=${2:-build/release/edge-infer}
mkdir -p "$out"
"$bin" make-model --arch gemma3 --layers 6 --dim 64 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --seed 11 -o "$out/gemma3_lm.gguf"
"$bin" make-model --arch clip-gemma3 --image-size 32 --patch-size 4 --dim 64 --ffn 128 --layers 2 --heads 1 --proj-dim 64 --seed 12 -o "$out/gemma3_mmproj.gguf"
"$bin" make-model --arch llama --layers 2 --dim 64 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --seed 13 -o "$out/llama_lm.gguf"
"$bin" make-model --arch clip-mlp --no-class-embd --image-size 32 --patch-size 4 --dim 64 --ffn 128 --layers 2 --heads 1 --proj-dim 64 --seed 14 -o "$out/mlp_mmproj.gguf"
