#!/usr/bin/env bash
# Decode of a GPT-OSS-20B-shaped model (README) in a process whose memory is capped
# by a cgroup that this script makes. It uses cgroup v1's memory controller, the one this VM
# mounts (its v2 hierarchy has no memory controller). The cap counts the page cache the process
# faults in, so a model file larger than the cap cannot stay resident. Each run starts with
# the model files dropped from the page cache: v1 charges a cached page to the cgroup that
# first read it, so a warm cache would escape the cap.
#
#   EDGE=.../edge-infer IK_BENCH=.../llama-bench MODELS=... CAP=8589934592 ROUNDS=2 \
#     bash capped.sh > capped.log
#
# Per run: decode t/s of tgS and tgL (S=8, L=24 unless set), and the blocks read from disk
# (GNU time's %I, 512 bytes each). Bytes read per token = (reads of tgL - reads of tgS) /
# (L - S): load and warm-up cancel out.
set -u
CAP=${CAP:-8589934592}
S=${S:-8}
L=${L:-24}
ROUNDS=${ROUNDS:-3}
. "$(dirname "$0")/../../memory_cap.sh"  # the cgroup and run()

for r in $(seq "$ROUNDS"); do
  for n in "$S" "$L"; do
    run edge-mxfp4-prepacked $n "$EDGE" bench -m "$MODELS/gptoss20b-mxfp4-packed.gguf" -p 0 -n $n -r 1 -t 2 --roofline-bytes 0
    run ik-mxfp4-mmap $n "$IK_BENCH" -m "$MODELS/gptoss20b-mxfp4-f32bias.gguf" -p 0 -n $n -r 1 -t 2 -fmoe 1
  done
done
echo "cgroup max_usage $(cat "$CG/memory.max_usage_in_bytes") failcnt $(cat "$CG/memory.failcnt")"
