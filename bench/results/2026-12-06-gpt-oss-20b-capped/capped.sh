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
self=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)
CG=/sys/fs/cgroup/memory${self%/}/edge-bench-cap
mkdir -p "$CG" || { echo "cannot make a memory cgroup at $CG" >&2; exit 1; }
trap 'rmdir "$CG" 2>/dev/null' EXIT
echo "$CAP" > "$CG/memory.limit_in_bytes"
echo "cgroup $CG limit $(cat "$CG/memory.limit_in_bytes")"

evict() {  # drop the model files from the page cache
  python3 -c 'import os,sys
for f in sys.argv[1:]:
    fd=os.open(f,os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED); os.close(fd)' \
    "$MODELS"/*.gguf
}

run() {  # name n command...
  local name=$1 n=$2
  shift 2
  evict
  local out
  out=$(bash -c 'echo $$ > "$0/cgroup.procs"; exec /usr/bin/time -f "READ_BLOCKS %I MAXRSS_KB %M" "$@"' \
        "$CG" "$@" 2>&1)
  local ts blocks rss
  ts=$(echo "$out" | grep -o "tg$n *| *[0-9.]*" | grep -o "[0-9.]*$")
  blocks=$(echo "$out" | sed -n 's/.*READ_BLOCKS \([0-9]*\).*/\1/p')
  rss=$(echo "$out" | sed -n 's/.*MAXRSS_KB \([0-9]*\).*/\1/p')
  echo "RESULT arm=$name n=$n tg_ts=${ts:-FAILED} read_blocks=${blocks:-?} maxrss_kb=${rss:-?}"
  [ -n "$ts" ] || echo "$out" | tail -5
}

for r in $(seq "$ROUNDS"); do
  for n in "$S" "$L"; do
    run edge-mxfp4-prepacked $n "$EDGE" bench -m "$MODELS/gptoss20b-mxfp4-packed.gguf" -p 0 -n $n -r 1 -t 2 --roofline-bytes 0
    run ik-mxfp4-mmap $n "$IK_BENCH" -m "$MODELS/gptoss20b-mxfp4.gguf" -p 0 -n $n -r 1 -t 2 -fmoe 1
  done
done
echo "cgroup max_usage $(cat "$CG/memory.max_usage_in_bytes") failcnt $(cat "$CG/memory.failcnt")"
