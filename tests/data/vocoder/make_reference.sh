#!/usr/bin/env bash
# Regenerates llamacpp_d32.pcm.f32 and llamacpp_d48.pcm.f32: the PCM that llama.cpp (commit
# c392e5094deaf2d1a7c18683214f007fad3fe42b, Feb 2025, the tts example's era) produces for
# two random-weight wavtokenizer-dec files written by our make-model. Read by
# tests/model/vocoder_reference_test.cpp. Not part of the build or CI: it needs a llama.cpp
# source tree (LLAMA_SRC) and builds it outside this repository.
#
# The harness below is ours: it runs llama.cpp's graph for the codes (llama_decode with
# embeddings on, one batch, n_ubatch >= the code count) and passes the head output to the
# tts example's own embd_to_audio (the example's source is #included, its main renamed), so
# both the graph and the example's ISTFT are llama.cpp's. The example's "zero the first
# 0.25 s" step lives in its main and is not applied.
#
# Usage: LLAMA_SRC=/path/to/llama.cpp EDGE=build/release/edge-infer tests/data/vocoder/make_reference.sh
set -euo pipefail
: "${LLAMA_SRC:?set LLAMA_SRC to a llama.cpp checkout}"
EDGE=$(realpath "${EDGE:-build/release/edge-infer}")
OUT=$(realpath "$(dirname "$0")")
WORK=$(mktemp -d)
cmake -S "$LLAMA_SRC" -B "$WORK/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
  -DBUILD_SHARED_LIBS=OFF -DGGML_OPENMP=OFF >/dev/null
cmake --build "$WORK/build" -j2 --target llama common >/dev/null
cat >"$WORK/harness.cpp" <<CPP
#define main tts_example_main
#include "$LLAMA_SRC/examples/tts/tts.cpp"
#undef main
#include <fstream>
#include <sstream>
int main(int argc, char** argv) {
  std::vector<llama_token> codes;
  std::stringstream ss(argv[2]);
  for (std::string t; std::getline(ss, t, ',');) codes.push_back(std::stoi(t));
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  auto cp = llama_context_default_params();
  cp.embeddings = true;
  cp.n_ctx = cp.n_batch = cp.n_ubatch = 8192;
  cp.n_threads = cp.n_threads_batch = 2;
  llama_context* ctx = llama_init_from_model(model, cp);
  const int n = (int)codes.size();
  llama_batch batch = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; ++i) common_batch_add(batch, codes[i], i, {0}, true);
  if (!model || !ctx || llama_decode(ctx, batch) != 0) return 1;
  auto audio = embd_to_audio(llama_get_embeddings(ctx), n, llama_model_n_embd(model), 2);
  std::ofstream(argv[3], std::ios::binary)
      .write((const char*)audio.data(), sizeof(float) * audio.size());
  return 0;
}
CPP
g++ -O2 -std=c++17 -I"$LLAMA_SRC/include" -I"$LLAMA_SRC/ggml/include" -I"$LLAMA_SRC/common" \
  "$WORK/harness.cpp" -o "$WORK/harness" "$WORK/build/common/libcommon.a" \
  "$WORK/build/src/libllama.a" "$WORK/build/ggml/src/libggml.a" \
  "$WORK/build/ggml/src/libggml-cpu.a" "$WORK/build/ggml/src/libggml-base.a" -lpthread

# llama.cpp's CPU convolutions need F16 kernels, hence --type f16.
"$EDGE" make-model --arch wavtokenizer-dec --dim 32 --layers 2 --vocab 64 --type f16 \
  -o "$WORK/d32.gguf"
"$WORK/harness" "$WORK/d32.gguf" 1,5,9,63,0,17,33,2,40,12,7,8 "$OUT/llamacpp_d32.pcm.f32"
CODES=$(for i in $(seq 0 39); do echo $(((i * 37 + 11) % 100)); done | paste -sd,)
"$EDGE" make-model --arch wavtokenizer-dec --dim 48 --layers 3 --vocab 100 --type f16 \
  --seed 7 -o "$WORK/d48.gguf"
"$WORK/harness" "$WORK/d48.gguf" "$CODES" "$OUT/llamacpp_d48.pcm.f32"
rm -rf "$WORK"
