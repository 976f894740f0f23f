#!/bin/sh
# Builds the probe variants in a scratch folder and runs them interleaved, 3 rounds.
# Usage: sh run.sh > out.txt   (needs g++, python3 and an AVX2 CPU)
set -e
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
python3 "$here/gen_mix.py" > "$tmp/mix.cpp"
g++ -O2 -mavx2 "$tmp/mix.cpp" -o "$tmp/mix"
g++ -O2 -mavx2 "$here/throughput.cpp" -o "$tmp/throughput"
for v in base:"" t3:"-DTT=3" pair:"-DPAIR" nofold:"-DNOFOLD" presc:"-DPRESC"; do
  g++ -O3 -mavx2 -mfma ${v#*:} "$here/tile.cpp" -o "$tmp/tile_${v%%:*}"
done
for round in 1 2 3; do
  echo "round $round"
  "$tmp/throughput"
  "$tmp/mix"
  for v in base t3 pair nofold presc; do printf '%-7s ' "$v"; "$tmp/tile_$v" 2048; done
done
rm -rf "$tmp"
