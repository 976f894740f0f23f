// Reference audio embeddings from ik_llama.cpp's mtmd (the library, not our code), for
// tests/model/whisper_mtmd_test.cpp. Build and run: see README.md in this folder.
//
// Usage: mtmd_audio_ref LM.gguf MMPROJ.gguf > OUT.txt
// Feeds mtmd the fixed 16 kHz signal below (the test computes the same samples), encodes
// the audio chunk and prints "n_tokens N n_embd E", then for each row listed in kRows the
// row's E values, then for every row its mean and root-mean-square; then the text chunk's
// text chunks' token ids ("tokens ...": the audio begin marker, no BOS; then "hello") and
// the LM's logits at the last prompt token ("logits n_past P ..."; the prompt is marker
// tokens, audio rows, "hello", evaluated by mtmd_helper_eval_chunks; mtmd gives no logits
// on media rows, so the first logits after the media are those of the next text token).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"

static const int kRows[] = {0, 1, 2, 50, 100, 186, 374};

static std::vector<float> signal() {  // 1.5 s: two tones and an integer-hash noise
  std::vector<float> x(24000);
  for (size_t i = 0; i < x.size(); ++i) {
    const double t = static_cast<double>(i);
    const double noise = static_cast<double>((i * 7919) % 1000) / 1000.0 - 0.5;
    x[i] = static_cast<float>(0.5 * std::sin(2 * M_PI * 440.0 * t / 16000) +
                              0.25 * std::sin(2 * M_PI * 3000.0 * t / 16000 + 0.3) + 0.1 * noise);
  }
  return x;
}

static void quiet(ggml_log_level, const char*, void*) {}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s LM.gguf MMPROJ.gguf\n", argv[0]);
    return 2;
  }
  llama_log_set(quiet, nullptr);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  llama_model* lm = llama_model_load_from_file(argv[1], mp);
  if (!lm) return 1;
  mtmd_context_params p = mtmd_context_params_default();
  p.use_gpu = false;
  p.print_timings = false;
  p.n_threads = 2;
  p.verbosity = GGML_LOG_LEVEL_ERROR;
  mtmd_context* ctx = mtmd_init_from_file(argv[2], lm, p);
  if (!ctx || !mtmd_support_audio(ctx)) return 1;
  const std::vector<float> x = signal();
  mtmd_bitmap* bmp = mtmd_bitmap_init_from_audio(x.size(), x.data());
  const std::string prompt = std::string(mtmd_default_marker()) + "hello";  // audio, then text
  mtmd_input_text text{prompt.c_str(), false, true};
  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  const mtmd_bitmap* bitmaps[] = {bmp};
  if (mtmd_tokenize(ctx, chunks, &text, bitmaps, 1) != 0) return 1;
  for (size_t c = 0; c < mtmd_input_chunks_size(chunks); ++c) {
    const mtmd_input_chunk* ch = mtmd_input_chunks_get(chunks, c);
    if (mtmd_input_chunk_get_type(ch) != MTMD_INPUT_CHUNK_TYPE_AUDIO) continue;
    if (mtmd_encode_chunk(ctx, ch) != 0) return 1;
    const float* e = mtmd_get_output_embd(ctx);
    const int n = static_cast<int>(mtmd_input_chunk_get_n_tokens(ch));
    const int d = llama_model_n_embd(lm);
    std::printf("n_tokens %d n_embd %d\n", n, d);
    for (int r : kRows) {
      if (r >= n) continue;
      std::printf("row %d", r);
      for (int i = 0; i < d; ++i) std::printf(" %.7g", e[r * d + i]);
      std::printf("\n");
    }
    for (int r = 0; r < n; ++r) {
      double s = 0, s2 = 0;
      for (int i = 0; i < d; ++i) s += e[r * d + i], s2 += double(e[r * d + i]) * e[r * d + i];
      std::printf("stat %d %.7g %.7g\n", r, s / d, std::sqrt(s2 / d));
    }
  }
  for (size_t c = 0; c < mtmd_input_chunks_size(chunks); ++c) {
    const mtmd_input_chunk* ch = mtmd_input_chunks_get(chunks, c);
    if (mtmd_input_chunk_get_type(ch) != MTMD_INPUT_CHUNK_TYPE_TEXT) continue;
    size_t n = 0;
    const llama_token* t = mtmd_input_chunk_get_tokens_text(ch, &n);
    std::printf("tokens");
    for (size_t i = 0; i < n; ++i) std::printf(" %d", t[i]);
    std::printf("\n");
  }
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 1024;
  cp.n_batch = 512;
  cp.n_ubatch = 512;
  cp.n_threads = cp.n_threads_batch = 2;
  llama_context* lctx = llama_init_from_model(lm, cp);
  if (!lctx) return 1;
  llama_pos n_past = 0;
  if (mtmd_helper_eval_chunks(ctx, lctx, chunks, 0, 0, 512, true, &n_past) != 0) return 1;
  const float* logits = llama_get_logits_ith(lctx, -1);
  const int n_vocab = llama_n_vocab(lm);
  std::printf("logits n_past %d", n_past);
  for (int i = 0; i < n_vocab; ++i) std::printf(" %.7g", logits[i]);
  std::printf("\n");
  llama_free(lctx);
  mtmd_input_chunks_free(chunks);
  mtmd_bitmap_free(bmp);
  mtmd_free(ctx);
  llama_free_model(lm);
  return 0;
}
