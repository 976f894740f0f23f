#!/bin/bash
# Interleaved side-by-side of bench/packed_bench.cpp built against three kernel libraries:
#   before = 69653b8 (last commit before this session), q6k-before = 8f7cacb (first commit
#   of the session; its AVX2 / AVX-512 Q6K kernels are 69653b8's, and its packed_bench has
#   the q6k kind), after = f348e96. One thread, matrix in cache (PACKED_BENCH_HOT=1), CPU time.
#   Build each: g++ -std=c++20 -O2 -Isrc bench/packed_bench.cpp build/release/lib{edge_kernels,
#   edge_quant,edge_formats,edge_core}.a -lfmt -lpthread -o BIN   (at that commit)
set -u
BEFORE=$1 Q6K_BEFORE=$2 AFTER=$3
for round in 1 2 3; do
  for isa in avx2 avx512_vnni; do
    for kg in "w4s 32" "w4s 64" "w4s 128" "w6 32" "q4k 128" "q5k 128" "q6k 128"; do
      set -- $kg
      if [ "$1" = q6k ]; then pair="q6k-before:$Q6K_BEFORE after:$AFTER"; else pair="before:$BEFORE after:$AFTER"; fi
      for arm in $pair; do
        name=${arm%%:*} bin=${arm#*:}
        line=$(PACKED_BENCH_HOT=1 $bin 1 $1 $isa 6144 $2 a8 2>&1 | tail -1)
        echo "round $round $name | $line"
      done
    done
  done
done
