#!/usr/bin/env bash
# Regenerates port_codes.txt: the greedy frames of qwen3-tts.cpp (Danmoreng/qwen3-tts.cpp
# commit 16bb5afcd06311031c72a8488f8d59660dc2fb46, a fork of predict-woo/qwen3-tts.cpp,
# with ggml-org/ggml at its submodule commit af97976c7810cdabb1863172f31c432dab767de7) for
# a random-weight Qwen3-TTS checkpoint written by our make-model. Read by
# tests/model/qwen3_tts_conformance_test.cpp. Not part of the build or CI: it needs that
# source tree (PORT_SRC, with ggml/ filled in) and builds it outside this repository.
#
# The two harness programs beside this script are ours: to_port_gguf.cpp writes the
# checkpoint as the GGUF the port's converter (scripts/convert_tts_to_gguf.py) writes
# (its tensor names and metadata keys; it links our formats library), and port_codes.cpp
# runs the port's TTSTransformer::generate greedily (temperature 0, repetition penalty
# 1.05) for the chat ids, speaker and language id, printing one frame per line.
#
# Usage: PORT_SRC=/path/to/qwen3-tts.cpp BUILD=build/release tests/data/qwen3_tts/make_reference.sh
set -euo pipefail
: "${PORT_SRC:?set PORT_SRC to a qwen3-tts.cpp checkout with ggml/}"
HERE=$(realpath "$(dirname "$0")")
ROOT=$(realpath "$HERE/../../..")
BUILD=$(realpath "${BUILD:-$ROOT/build/release}")
WORK=$(mktemp -d)
cmake -S "$PORT_SRC" -B "$WORK/port" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF >/dev/null
cmake --build "$WORK/port" -j2 --target tts_transformer >/dev/null
LIBS="$BUILD/libedge_convert.a $BUILD/libedge_model.a $BUILD/libedge_tokenizer.a $BUILD/libedge_kernels.a
      $BUILD/libedge_quant.a $BUILD/libedge_formats.a $BUILD/libedge_core.a"
SYS="-lfmt -lpng -ljpeg -lpthread -lpcre2-8 -lutf8proc -lkissfft-float -lsamplerate"
cat >"$WORK/make_ckpt.cpp" <<CPP
#include "convert/random_qwen3_tts.h"
int main(int, char** argv) {
  edge::RandomQwen3TtsOptions o;  // = make-model --arch qwen3-tts --layers 2 --dim 256 --heads 4
  o.n_layer = 2; o.n_embd = 256; o.n_head = 4; o.n_head_kv = 2; o.head_dim = 64; o.n_ff = 512;
  o.cp_n_layer = 2; o.codebook = 2048; o.text_hidden = 256; o.dtype = edge::DType::F32; o.seed = 7;
  return edge::write_random_qwen3_tts(o, argv[1]).ok() ? 0 : 1;
}
CPP
g++ -std=c++20 -O1 -I"$ROOT/src" "$WORK/make_ckpt.cpp" $LIBS $SYS -o "$WORK/make_ckpt"
g++ -std=c++20 -O1 -I"$ROOT/src" "$HERE/to_port_gguf.cpp" $LIBS $SYS -o "$WORK/to_port_gguf"
g++ -std=c++17 -O2 -I"$PORT_SRC/src" -I"$PORT_SRC/ggml/include" "$HERE/port_codes.cpp" \
  "$WORK/port/libtts_transformer.a" "$WORK/port/ggml/src/libggml.a" "$WORK/port/ggml/src/libggml-cpu.a" \
  "$WORK/port/ggml/src/libggml-base.a" -lgomp -lpthread -o "$WORK/port_codes"
"$WORK/make_ckpt" "$WORK/ckpt"
"$WORK/to_port_gguf" "$WORK/ckpt" "$WORK/port.gguf"
# "<|im_start|>assistant\nhello world this is a test of voice<|im_end|>\n<|im_start|>assistant\n"
# as our tokenizer reads the checkpoint's vocab.json + merges.txt (the test checks it).
IDS="320 263 10 269 307 312 313 314 315 316 317 321 10 320 263 10"
{
  echo "# qwen3-tts.cpp 16bb5af greedy frames; made by make_reference.sh"
  echo "ids: $IDS"
  echo "speaker: ryan"
  echo "language_id: 2050"
  "$WORK/port_codes" "$WORK/port.gguf" ryan 2050 12 $IDS 2>/dev/null
} >"$HERE/port_codes.txt"
rm -rf "$WORK"
