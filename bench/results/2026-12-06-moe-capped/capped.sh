#!/usr/bin/env bash
# Decode of the synthetic MoE (../2026-12-06-moe-vs-ik) in a process whose memory is capped
# by a cgroup that this script makes. It uses cgroup v1's memory controller, the one this VM
# mounts (its v2 hierarchy has no memory controller). The cap counts the page cache the process
# faults in, so a model file larger than the cap cannot stay resident. Each run starts with
# the model files dropped from the page cache: v1 charges a cached page to the cgroup that
# first read it, so a warm cache would escape the cap.
#
#   EDGE=.../edge-infer IK_BENCH=.../llama-bench MODELS=... CAP=3221225472 ROUNDS=3 \
#     bash capped.sh > capped.log
#
# Per run: decode t/s of tg16 and tg64, and the blocks read from disk (GNU time's %I, 512
# bytes each). Bytes read per token = (reads of tg64 - reads of tg16) / 48: load and warm-up
# cancel out.
set -u
CAP=${CAP:-3221225472}
ROUNDS=${ROUNDS:-3}
. "$(dirname "$0")/../../memory_cap.sh"  # the cgroup and run()

for r in $(seq "$ROUNDS"); do
  for n in 16 64; do
    run edge-w4a8-g128 $n "$EDGE" bench -m "$MODELS/moe-w4a8.gguf" -p 0 -n $n -r 1 -t 2 --roofline-bytes 0
    run edge-q4_0-prepacked $n "$EDGE" bench -m "$MODELS/moe-q4_0-packed.gguf" -p 0 -n $n -r 1 -t 2 --roofline-bytes 0
    run ik-q4_0-mmap $n "$IK_BENCH" -m "$MODELS/moe-q4_0.gguf" -p 0 -n $n -r 1 -t 2 -fmoe 1
  done
done
echo "cgroup max_usage $(cat "$CG/memory.max_usage_in_bytes") failcnt $(cat "$CG/memory.failcnt")"
