// Reference logits and greedy tokens from ik_llama.cpp for the MoE conformance test
// (tests/e2e/moe_conformance_test.cpp). Our code; it only calls the public llama API.
// Build and run (outside this repository's build; IK = an ik_llama.cpp checkout whose build/
// has libllama built: cmake --build build --target llama):
//
//   g++ -O2 -std=c++17 -I IK/include -I IK/ggml/include tests/data/moe/make_reference.cpp \
//       -LIK/build/src -LIK/build/ggml/src -lllama -lggml -Wl,-rpath,IK/build/src:IK/build/ggml/src \
//       -o /tmp/make_moe_reference
//   (ik_llama.cpp 8337e4cd3, configured -DGGML_NATIVE=ON -DGGML_IQK_FLASH_ATTENTION=OFF; that
//   build's libggml still names two FA symbols, which a two-line C file defining them as
//   no-ops, compiled in with -Wl,--export-dynamic, satisfies: flash attention stays off here)
//   sh tests/data/moe/make_models.sh /tmp/moe_models        # our make-model, fixed seeds
//   for m in qwen3moe gpt_oss; do
//     /tmp/make_moe_reference /tmp/moe_models/$m.gguf 16 tests/data/moe/$m; done
//
// The prompt is the token ids below (fed as ids: no tokenizer in the way); with PROMPT_LEN
// longer than them, ids from a fixed generator follow up to that length (the hybrid
// conformance test's prompt spans several 64-token prefill chunks). Writes OUT.logits.f32 (the logits of every prompt position, [n_prompt, n_vocab],
// little-endian f32) and OUT.json (the prompt and N greedy tokens, one decode at a time).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "llama.h"

static std::vector<llama_token> kPrompt = {1, 259, 337, 266, 261, 262, 268, 261, 349, 263, 275,
                                           349, 264, 273, 262, 276, 260, 338, 300, 411};

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6) {
    std::fprintf(stderr, "usage: %s MODEL.gguf N_GREEDY OUT_PREFIX [PROMPT_LEN [stepwise]]\n", argv[0]);
    return 2;
  }
  // stepwise: the prompt is decoded one token per llama_decode (ik_llama.cpp 8337e4cd3's
  // multi-token DeltaNet path disagrees with its own one-token path when a file has more
  // value heads than key heads: row 0 of a batch changes with the batch's length).
  const bool stepwise = argc == 6 && std::string(argv[5]) == "stepwise";
  const int n_greedy = std::atoi(argv[2]);
  const std::string out = argv[3];
  // Ids 260..499 from a 32-bit LCG (the test regenerates nothing: the ids are in OUT.json).
  uint32_t lcg = 12345;
  for (int len = argc >= 5 ? std::atoi(argv[4]) : 0; static_cast<int>(kPrompt.size()) < len;) {
    lcg = lcg * 1664525u + 1013904223u;
    kPrompt.push_back(static_cast<llama_token>(260 + (lcg >> 8) % 240));
  }
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 512;
  cp.n_batch = 512;
  cp.n_ubatch = 512;
  cp.n_threads = cp.n_threads_batch = 2;
  cp.flash_attn = false;  // the plain attention path (the build may have no FA kernels)
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) return 1;
  const int n_vocab = llama_n_vocab(model);
  llama_batch batch = llama_batch_init(static_cast<int>(kPrompt.size()), 0, 1);
  for (size_t i = 0; i < kPrompt.size(); ++i) {
    batch.token[i] = kPrompt[i];
    batch.pos[i] = static_cast<llama_pos>(i);
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = static_cast<int>(kPrompt.size());
  std::vector<float> all;
  if (stepwise) {
    // ik_llama.cpp takes a first decode of the BOS token alone for a warm-up and runs EVERY
    // expert in it: decode one token and clear the cache first, so the prompt's first
    // token runs as a real one.
    llama_batch warm = llama_batch_get_one(&kPrompt[0], 1, 0, 0);
    if (llama_decode(ctx, warm) != 0) return 1;
    llama_synchronize(ctx);  // counts the evaluation: the next one is no warm-up
    llama_kv_cache_clear(ctx);
    for (size_t i = 0; i < kPrompt.size(); ++i) {
      llama_batch one = llama_batch_get_one(&kPrompt[i], 1, static_cast<llama_pos>(i), 0);
      if (llama_decode(ctx, one) != 0) return 1;
      const float* l = llama_get_logits_ith(ctx, -1);
      all.insert(all.end(), l, l + n_vocab);
    }
  } else {
    if (llama_decode(ctx, batch) != 0) return 1;
    for (size_t i = 0; i < kPrompt.size(); ++i) {
      const float* l = llama_get_logits_ith(ctx, static_cast<int>(i));
      all.insert(all.end(), l, l + n_vocab);
    }
  }
  FILE* f = std::fopen((out + ".logits.f32").c_str(), "wb");
  if (!f || std::fwrite(all.data(), sizeof(float), all.size(), f) != all.size()) return 1;
  std::fclose(f);
  std::vector<llama_token> greedy;
  const float* last = llama_get_logits_ith(ctx, stepwise ? -1 : static_cast<int>(kPrompt.size()) - 1);
  for (int s = 0; s < n_greedy; ++s) {
    int best = 0;
    for (int v = 1; v < n_vocab; ++v)
      if (last[v] > last[best]) best = v;
    greedy.push_back(best);
    const llama_pos pos = static_cast<llama_pos>(kPrompt.size()) + s;
    llama_batch one = llama_batch_get_one(&greedy.back(), 1, pos, 0);
    if (llama_decode(ctx, one) != 0) return 1;
    last = llama_get_logits_ith(ctx, -1);
  }
  FILE* j = std::fopen((out + ".json").c_str(), "w");
  if (!j) return 1;
  std::fprintf(j, "{\"n_vocab\": %d, \"prompt\": [", n_vocab);
  for (size_t i = 0; i < kPrompt.size(); ++i) std::fprintf(j, "%s%d", i ? ", " : "", kPrompt[i]);
  std::fprintf(j, "], \"greedy\": [");
  for (size_t i = 0; i < greedy.size(); ++i) std::fprintf(j, "%s%d", i ? ", " : "", greedy[i]);
  std::fprintf(j, "]}\n");
  std::fclose(j);
  llama_batch_free(batch);
  llama_free(ctx);
  llama_free_model(model);
  return 0;
}
