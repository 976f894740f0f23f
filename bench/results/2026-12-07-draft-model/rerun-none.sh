#!/bin/bash
# The "none" pair (drafts never taken) on ours again, 5 interleaved reps of 256 tokens: the
# 3-rep W4A8 ratio of run.sh (0.94x) rests on 4 verify steps per run, so it is noise-sized.
D=${MODELS:-/work/models}
E=${EDGE:-/work/main/build/release/edge-infer}
out=${OUT:-bench/results/2026-12-07-draft-model/rerun-none}
P="Once upon a time, in a small town by the sea, there lived an old fisherman who"
mkdir -p $out
head -1 /proc/stat > $out/stat_before.txt; uptime >> $out/stat_before.txt
for rep in 1 2 3 4 5; do
  for q in w4a8:ref1.5b-w4a8-g128.gguf:draft2-w4a8-g128.gguf q4_0:ref1.5b-q4_0.gguf:draft2-q4_0.gguf; do
    IFS=: read name target draft <<< "$q"
    $E generate -m $D/$target -p "$P" -n 256 --temp 0 -t 2 --json > $out/edge_plain_none_${name}_$rep.json 2>/dev/null
    $E generate -m $D/$target -p "$P" -n 256 --temp 0 -t 2 --spec draft --draft $D/$draft --draft-max 4 \
      --json > $out/edge_draft_none_${name}_$rep.json 2>/dev/null
  done
done
head -1 /proc/stat > $out/stat_after.txt; uptime >> $out/stat_after.txt
