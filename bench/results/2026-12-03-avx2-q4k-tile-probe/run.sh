#!/bin/sh
# Builds the project's x86 micro-benchmarks (bench/int8_peak.cpp: single-instruction peaks;
# bench/int8_tile_ports.cpp: the tile's block in assembly, parts taken out) and this folder's
# tile.cpp variants (the compiled tile loop over pre-unpacked planes, with its fold), and runs
# them interleaved, 5 rounds.
# Usage: sh run.sh > out.txt   (needs g++ and an AVX2 CPU)
set -e
here=$(cd "$(dirname "$0")" && pwd)
bench=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
g++ -O2 -mavx2 "$bench/int8_peak.cpp" -o "$tmp/int8_peak"
g++ -O2 -mavx2 "$bench/int8_tile_ports.cpp" -o "$tmp/int8_tile_ports"
for v in base:"" t3:"-DTT=3" pair:"-DPAIR" nofold:"-DNOFOLD" presc:"-DPRESC"; do
  g++ -O3 -mavx2 -mfma ${v#*:} "$here/tile.cpp" -o "$tmp/tile_${v%%:*}"
done
for round in 1 2 3 4 5; do
  echo "round $round"
  "$tmp/int8_peak"
  "$tmp/int8_tile_ports"
  for v in base t3 pair nofold presc; do printf '%-7s ' "$v"; "$tmp/tile_$v" 2048; done
done
rm -rf "$tmp"
