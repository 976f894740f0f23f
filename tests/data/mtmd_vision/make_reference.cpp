// Reference image embeddings and first logits after the image from ik_llama.cpp's mtmd, for
// tests/e2e/mtmd_conformance_test.cpp. Our code; it only calls the public llama / mtmd API.
// Build and run (outside this repository's build; IK = an ik_llama.cpp checkout whose build/
// has the mtmd target built: cmake --build build --target mtmd llama-mtmd-cli):
//
//   g++ -O2 -std=c++17 -I IK/include -I IK/ggml/include -I IK/common -I IK/examples/mtmd \
//       tests/data/mtmd_vision/make_reference.cpp IK/build/examples/mtmd/libmtmd.a \
//       IK/build/src/libllama.a IK/build/ggml/src/libggml.a -fopenmp -lpthread -lm \
//       -o /tmp/make_mtmd_reference
//   sh tests/data/mtmd_vision/make_models.sh /tmp/mtmd_models   # our make-model, fixed seeds
//   /tmp/make_mtmd_reference /tmp/mtmd_models/gemma3_lm.gguf /tmp/mtmd_models/gemma3_mmproj.gguf 32 \
//       tests/data/mtmd_vision/gemma3
//   /tmp/make_mtmd_reference /tmp/mtmd_models/llama_lm.gguf /tmp/mtmd_models/mlp_mmproj.gguf 32 \
//       tests/data/mtmd_vision/mlp
//   /tmp/make_mtmd_reference /tmp/mtmd_models/gemma3_lm.gguf /tmp/mtmd_models/gemma3_mmproj.gguf \
//       32x16 tests/data/mtmd_vision/gemma3_wide
//   /tmp/make_mtmd_reference /tmp/mtmd_models/llama_lm.gguf /tmp/mtmd_models/mlp_mmproj.gguf \
//       16x32 tests/data/mtmd_vision/mlp_tall
//
// The image is SIZE x SIZE (or W x H) RGB, pixel (x, y, c) = (37x + 91y + 53c + 7xy) mod 256.
// At the projector's image_size neither side resizes; 32x16 and 16x32 are letterboxed into
// 32 x 32 without resampling (scale 1), so they check the padding alone. The prompt is the marker and
// " what colour". Writes OUT.json: the prompt's chunks (text token ids, the image's row
// count), OUT.embd.f32 (the image rows [n, n_embd]) and OUT.logits.f32 (the logits after the
// last chunk, [n_vocab]), little-endian f32.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"

static bool write_f32(const std::string& path, const float* v, size_t n) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(v, sizeof(float), n, f) == n;
  return std::fclose(f) == 0 && ok;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s LM.gguf MMPROJ.gguf SIZE|WxH OUT_PREFIX\n", argv[0]);
    return 2;
  }
  const std::string out = argv[4];
  const int width = std::atoi(argv[3]);
  const char* sep = std::strchr(argv[3], 'x');
  const int height = sep ? std::atoi(sep + 1) : width;
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 512;
  cp.n_batch = 512;
  cp.n_ubatch = 512;
  cp.n_threads = cp.n_threads_batch = 2;
  // Flash attention on: without it ik fills the non-causal mask of the gemma3 image batch by
  // batch index (columns 0..n_tokens-1, the first KV cells, the rest left stale), while the
  // image sits at cells n_past..; its flash-attention path reads the cells' positions.
  // Graph reuse off (it left the mask unallocated when mtmd switched to non-causal).
  cp.flash_attn = true;
  cp.graph_reuse = false;
  llama_context* lctx = llama_init_from_model(model, cp);
  if (!lctx) return 1;
  mtmd_context_params p = mtmd_context_params_default();
  p.use_gpu = false;
  // 4 threads for the encoder (2 cores are enough): with fewer than 4, ik's CPU copy of a
  // transposed F32 tensor takes a fast path that assumes the copy keeps the source's shape,
  // and gemma3's ggml_cont_4d(transpose(x), g, g, E) before the pool copies only g * g of
  // the g * g * E values (ggml.c ggml_compute_forward_dup_bytes, src0->ne[2] * ne[3] >=
  // nth / 2): mtmd's pooled rows are garbage then.
  p.n_threads = 4;
  p.print_timings = false;
  mtmd_context* ctx = mtmd_init_from_file(argv[2], model, p);
  if (!ctx) return 1;

  std::vector<unsigned char> rgb(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c) rgb[(static_cast<size_t>(y) * width + x) * 3 + c] = (37 * x + 91 * y + 53 * c + 7 * x * y) % 256;
  mtmd_bitmap* bmp = mtmd_bitmap_init(width, height, rgb.data());
  const mtmd_bitmap* bitmaps[1] = {bmp};
  // Text after the image, so that the last chunk is text (its last token gives the logits).
  const std::string prompt = std::string(mtmd_default_marker()) + " what colour";
  mtmd_input_text text = {prompt.c_str(), /*add_special=*/true, /*parse_special=*/true};
  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  if (mtmd_tokenize(ctx, chunks, &text, bitmaps, 1) != 0) return 1;

  std::string json = "{\"chunks\": [";
  for (size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i) {
    const mtmd_input_chunk* ch = mtmd_input_chunks_get(chunks, i);
    if (i) json += ", ";
    if (mtmd_input_chunk_get_type(ch) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
      size_t n = 0;
      const llama_token* t = mtmd_input_chunk_get_tokens_text(ch, &n);
      json += "{\"text\": [";
      for (size_t k = 0; k < n; ++k) json += (k ? ", " : "") + std::to_string(t[k]);
      json += "]}";
    } else {
      const size_t n = mtmd_input_chunk_get_n_tokens(ch);
      if (mtmd_encode_chunk(ctx, ch) != 0) return 1;
      const int n_embd = llama_model_n_embd(model);
      if (!write_f32(out + ".embd.f32", mtmd_get_output_embd(ctx), n * n_embd)) return 1;
      json += "{\"image\": " + std::to_string(n) + "}";
    }
  }
  json += "]}\n";
  llama_pos n_past = 0;
  if (mtmd_helper_eval_chunks(ctx, lctx, chunks, 0, 0, 512, true, &n_past) != 0) return 1;
  const float* logits = llama_get_logits_ith(lctx, -1);
  if (!logits) return 1;
  if (!write_f32(out + ".logits.f32", logits, llama_n_vocab(model))) return 1;
  FILE* f = std::fopen((out + ".json").c_str(), "w");
  if (!f) return 1;
  std::fputs(json.c_str(), f);
  std::fclose(f);
  mtmd_input_chunks_free(chunks);
  mtmd_bitmap_free(bmp);
  mtmd_free(ctx);
  llama_free(lctx);
  llama_free_model(model);
  return 0;
}
