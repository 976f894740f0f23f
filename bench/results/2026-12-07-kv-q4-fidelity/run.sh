#!/bin/bash
# KL of the next-token distributions with a quantised KV cache against f16 KV, same model.
set -u
B=/work/main/build/release/edge-infer
out=/work/main/bench/results/2026-12-07-kv-q4-fidelity
mkdir -p $out
run() { # name model prompts ctx kvargs...
  local name=$1 model=$2 prompts=$3 ctx=$4; shift 4
  $B fidelity --ref $model --test $model --prompts $prompts --ctx $ctx --ref-kv-type f16 "$@" \
     --score-last 256 --greedy-tokens 16 -t 1 > $out/$name.json 2> $out/$name.err
  echo "$name $(python3 -c "import json;j=json.load(open('$out/$name.json'));print('kl_mean %.5f kl_p99 %.4f top1 %.4f greedy %.3f' % (j['kl_mean'],j['kl_p99'],j['top1_agreement'],j['greedy_match_fraction']))")"
}
S=/work/main/tests/data/stories260K/stories260K.bin
for ctx in 4096 16384; do p=/tmp/fid/s$((ctx/1024))k.txt
  for kv in q8 q4; do run stories260K-$ctx-$kv $S $p $ctx --kv-type $kv; done
  run stories260K-$ctx-q4k-f16v $S $p $ctx --kv-type-k q4 --kv-type-v f16
done
D=/work/models/draft2-w4a8-g128.gguf
for ctx in 4096 16384; do p=/tmp/fid/b$((ctx/1024))k.txt
  for kv in q8 q4; do run draft2-$ctx-$kv $D $p $ctx --kv-type $kv; done
  run draft2-$ctx-q4k-f16v $D $p $ctx --kv-type-k q4 --kv-type-v f16
done
