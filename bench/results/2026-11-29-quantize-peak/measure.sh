#!/bin/bash
# Peak memory of `edge-infer quantize`: runs the command and samples the process's
# /proc/PID/status every 20 ms; prints the largest RssAnon, RssFile and the kernel's VmHWM
# (peak RSS of all kinds) as JSON.
#   measure.sh EDGE_INFER_BINARY IN OUT [quantize options...]
set -euo pipefail
bin=$1; in=$2; out=$3; shift 3
"$bin" quantize "$in" "$out" "$@" 2>/tmp/quantize-peak.err &
pid=$!
peak_anon=0; peak_file=0; hwm=0
kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status" 2>/dev/null || true; }
start=$(date +%s.%N)
while kill -0 "$pid" 2>/dev/null; do
  a=$(kb RssAnon); f=$(kb RssFile); h=$(kb VmHWM)
  [[ -n "$a" && "$a" -gt "$peak_anon" ]] && peak_anon=$a
  [[ -n "$f" && "$f" -gt "$peak_file" ]] && peak_file=$f
  [[ -n "$h" && "$h" -gt "$hwm" ]] && hwm=$h
  sleep 0.02
done
wait "$pid"; rc=$?
end=$(date +%s.%N)
printf '{"command": "%s quantize %s %s %s", "rc": %d, "seconds": %.1f, "peak_rss_anon_kib": %d, "peak_rss_file_kib": %d, "vm_hwm_kib": %d, "sample_ms": 20}\n' \
  "$bin" "$in" "$out" "$*" "$rc" "$(echo "$end - $start" | bc)" "$peak_anon" "$peak_file" "$hwm"
