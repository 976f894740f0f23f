#!/bin/sh
# The two kernel changes of 665b1ce measured alone, side by side, one thread, interleaved,
# 6 rounds: bench/packed_bench.cpp's Q4K prefill (64 tokens, [6144, 2048] in cache, AVX2
# variant) and the attention of a 512-query prefill (../2026-12-03-attention-lanes-microbench/
# attention_bench.cpp, F16 cache, 16/8 heads, head dim 128, AVX2 table).
#   sh run.sh OLD_TREE NEW_TREE > out.txt
# Each tree is a checkout whose Release build (cmake --preset release; ninja -C build/release
# edge_kernels edge_quant edge_formats edge_core) is in build/release. Here: OLD = 1ba926c,
# NEW = 665b1ce.
set -e
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
for arm in old:$1 new:$2; do
  name=${arm%%:*} tree=${arm#*:}
  libs="$tree/build/release/libedge_kernels.a $tree/build/release/libedge_quant.a \
    $tree/build/release/libedge_formats.a $tree/build/release/libedge_core.a"
  g++ -std=c++20 -O2 -I"$tree/src" "$tree/bench/packed_bench.cpp" $libs -lfmt -lpthread \
    -o "$tmp/packed_$name"
  g++ -std=c++20 -O2 -I"$tree/src" "$here/../2026-12-03-attention-lanes-microbench/attention_bench.cpp" \
    $libs -lfmt -lpthread -o "$tmp/attn_$name"
done
for round in 1 2 3 4 5 6; do
  for name in old new; do
    PACKED_BENCH_HOT=1 "$tmp/packed_$name" 1 q4k avx2 6144 128 a8 | tail -1 |
      sed "s/^/round $round $name /"
    "$tmp/attn_$name" 512 20 x avx2 | sed "s/^/round $round $name prefill512 /"
  done
done
rm -rf "$tmp"
