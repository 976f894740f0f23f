#!/bin/bash
# Speculative vs plain decode, ours and llama.cpp's lookup decoding, on the same Q4_0 file and prompt.
M=${MODEL:-/work/models/ref1.5b-q4_0.gguf}
E=${EDGE:-/work/main/build/release/edge-infer}
L=${LLAMA_BIN:-/work/ext/lcpp/build/bin}
out=${OUT:-bench/results/2026-12-07-speculative-vs-llama-lookup}
mkdir -p $out
P=$(printf 'def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\n%.0s' 1 2 3 4; printf 'def fib(n):')
head -1 /proc/stat > $out/stat_before.txt; uptime >> $out/stat_before.txt
for rep in 1 2 3; do
  $E generate -m $M -p "$P" -n 128 --temp 0 -t 2 --json > $out/edge_plain_$rep.json 2>/dev/null
  $E generate -m $M -p "$P" -n 128 --temp 0 -t 2 --spec ngram --draft-max 4 --json > $out/edge_spec_$rep.json 2>/dev/null
  LD_LIBRARY_PATH=$L $L/llama-lookup -m $M -p "$P" -n 128 --temp 0 -t 2 -c 1024 --draft-max 0 > $out/lcpp_plain_$rep.txt 2>&1
  LD_LIBRARY_PATH=$L $L/llama-lookup -m $M -p "$P" -n 128 --temp 0 -t 2 -c 1024 --draft-max 4 > $out/lcpp_lookup_$rep.txt 2>&1
done
head -1 /proc/stat > $out/stat_after.txt; uptime >> $out/stat_after.txt
echo finished > $out/done
