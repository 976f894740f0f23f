#!/bin/sh
# Builds attention_bench.cpp against two kernel libraries and runs them interleaved, 5 rounds:
# prefill of 512 queries and decode at 4096 keys, every SIMD table of this CPU.
#   sh run.sh OLD_TREE NEW_TREE > out.txt
# Each tree is a checkout whose Release build (cmake --preset release; ninja -C build/release
# edge_kernels edge_quant edge_formats edge_core) is in build/release. Here: OLD = 3c79b48 (the
# kernels of f348e96, before the rows-in-lanes attention), NEW = 675ef8d.
set -e
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
for arm in old:$1 new:$2; do
  name=${arm%%:*} tree=${arm#*:}
  g++ -std=c++20 -O2 -I"$tree/src" "$here/attention_bench.cpp" \
    "$tree"/build/release/libedge_kernels.a "$tree"/build/release/libedge_quant.a \
    "$tree"/build/release/libedge_formats.a "$tree"/build/release/libedge_core.a \
    -lfmt -lpthread -o "$tmp/$name"
done
for round in 1 2 3 4 5; do
  for name in old new; do
    "$tmp/$name" 512 10 | sed "s/^/round $round $name prefill512 /"
    "$tmp/$name" 4096 50 d | sed "s/^/round $round $name decode4096 /"
  done
done
rm -rf "$tmp"
