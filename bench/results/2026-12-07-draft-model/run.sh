#!/bin/bash
# Draft-model speculation: ours (edge-infer generate --spec draft) against llama.cpp's
# llama-speculative, each against its own plain decode, interleaved, on two target/draft pairs:
#   agree: q28-s02 (28 layers, layers 2.. quiet at 0.02) drafted by draft2 (its first 2 layers)
#   none:  ref1.5b (28 ordinary layers) drafted by draft2: the draft is almost never right
# Files (random weights, tensors seeded by name so draft2's layers are the targets' first two):
#   edge-infer make-model --arch llama --layers 28 --dim 2048 --heads 16 --kv-heads 8 --ffn 6144 \
#     --vocab 32000 --type f16 [--quiet-from 2 --quiet-scale 0.02] -o {q28-s02,ref1.5b}-f16.gguf
#   edge-infer make-model ... --layers 2 ... -o draft2-f16.gguf
#   edge-infer quantize X-f16.gguf X-w4a8.gguf --type w4a8 --group 128   (ours)
#   llama-quantize X-f16.gguf X-q4_0.gguf Q4_0                          (both engines read these)
D=${MODELS:-/work/models}
E=${EDGE:-/work/main/build/release/edge-infer}
L=${LLAMA_BIN:-/work/ext/lcpp/build/bin}
out=${OUT:-bench/results/2026-12-07-draft-model}
N=${N:-128}
P="Once upon a time, in a small town by the sea, there lived an old fisherman who"
mkdir -p $out
head -1 /proc/stat > $out/stat_before.txt; uptime >> $out/stat_before.txt
edge() {  # name target draft
  $E generate -m $D/$2 -p "$P" -n $N --temp 0 -t 2 --json > $out/edge_plain_$1_$rep.json 2>/dev/null
  $E generate -m $D/$2 -p "$P" -n $N --temp 0 -t 2 --spec draft --draft $D/$3 --draft-max 4 \
    --json > $out/edge_draft_$1_$rep.json 2>/dev/null
}
lcpp() {  # name target draft
  LD_LIBRARY_PATH=$L $L/llama-lookup -m $D/$2 -p "$P" -n $N --temp 0 -t 2 -c 1024 --draft-max 0 \
    > $out/lcpp_plain_$1_$rep.txt 2>&1
  LD_LIBRARY_PATH=$L $L/llama-speculative -m $D/$2 -md $D/$3 -p "$P" -n $N --temp 0 -t 2 -c 1024 \
    --draft-max 4 > $out/lcpp_draft_$1_$rep.txt 2>&1
}
for rep in 1 2 3; do
  edge agree_w4a8 q28-s02-w4a8.gguf draft2-w4a8-g128.gguf
  edge agree_q4_0 q28-s02-q4_0.gguf draft2-q4_0.gguf
  lcpp agree_q4_0 q28-s02-q4_0.gguf draft2-q4_0.gguf
  edge none_w4a8 ref1.5b-w4a8-g128.gguf draft2-w4a8-g128.gguf
  edge none_q4_0 ref1.5b-q4_0.gguf draft2-q4_0.gguf
  lcpp none_q4_0 ref1.5b-q4_0.gguf draft2-q4_0.gguf
done
head -1 /proc/stat > $out/stat_after.txt; uptime >> $out/stat_after.txt
echo finished > $out/done
