# Shared by the capped-decode scripts under bench/results (sourced, not run): makes a cgroup
# v1 memory cgroup of CAP bytes under this shell's own cgroup (removed at exit) and defines
# run NAME N COMMAND...: drop $MODELS/*.gguf from the page cache (v1 charges a cached page to
# the cgroup that first read it, so a warm cache would escape the cap), run COMMAND inside
# the cgroup under GNU time, and print one RESULT line: the tgN t/s it reports, the blocks
# read from disk (512 bytes each) and the peak RSS.
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
