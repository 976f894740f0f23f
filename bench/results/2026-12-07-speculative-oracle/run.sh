#!/bin/bash
# Two passes of the speculative bench on the W4A8 1.5B file; steal/load recorded around each.
cd "$(dirname "$0")/../../.."
B=build/release/edge-infer
out=${OUT:-bench/results/2026-12-07-speculative-oracle}
mkdir -p $out
for pass in 1 2; do
  uptime > $out/load_before_$pass.txt; head -1 /proc/stat >> $out/load_before_$pass.txt
  $B bench -m ${MODEL:-ref1.5b-w4a8-g128.gguf} --spec-acceptance 0.8,0.5,0 --draft-max 4 -n 128 -r 3 -t 2 -o json > $out/w4a8_pass$pass.json 2> $out/w4a8_pass$pass.err
  uptime > $out/load_after_$pass.txt; head -1 /proc/stat >> $out/load_after_$pass.txt
done
echo finished > $out/done
