// Writes a model with deterministic random weights in any supported family, as a GGUF file
// (path ending in .gguf) or a Hugging Face directory (config.json, model.safetensors,
// tokenizer.json, tokenizer_config.json). The tokenizer is the synthetic SPM vocabulary
// (convert/synthetic_vocab.h). Used by `edge-infer make-model` and the tests.
//
// Values are generated per canonical tensor name from the seed, so the GGUF file and the
// HF directory of the same options hold the same model: HF Llama q/k rows are permuted to
// the rotate-half layout and Gemma norms are stored as w (GGUF: 1+w), exactly as real
// checkpoints differ, and both load to the same logits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"
#include "formats/tensor.h"
#include "model/config.h"

namespace edge {

struct RandomModelOptions {
  std::string arch = "llama";  // llama | qwen2 | qwen3 | gemma3 | spark
  int32_t n_layer = 2;
  int32_t n_embd = 64;
  int32_t n_head = 4;
  int32_t n_head_kv = 2;
  int32_t head_dim = 0;   // 0: n_embd / n_head
  int32_t n_ff = 0;       // 0: 2 * n_embd
  int32_t n_vocab = 512;  // >= ~400 (the synthetic vocabulary's fixed part)
  int64_t ctx = 2048;     // advertised context
  // gemma3/spark: window of sliding layers (0: 512) and period of the layer pattern
  // (0: gemma3 6 = 5 sliding + 1 global, spark 4 = 3 + 1).
  int32_t sliding_window = 0;
  int32_t sliding_pattern = 0;
  std::optional<bool> tied;  // default: false for llama/qwen2/qwen3, true for gemma3/spark
  // llama only: Llama-3.1 "llama3" RoPE scaling with this factor (0: none); GGUF gets a
  // rope_freqs.weight tensor, HF a rope_scaling object (low 1, high 4, original ctx 8192).
  float llama3_rope_factor = 0.0f;
  // MoE families (ArchFamily::moe): experts per layer, used per token, one expert's FFN
  // width (0: the family's defaults; width 0: n_ff / 2).
  int32_t n_expert = 0;
  int32_t n_expert_used = 0;
  int32_t n_ff_expert = 0;
  DType dtype = DType::F32;  // 2-D weights: F32 | F16 | BF16 (GGUF norms stay F32)
  // Stacked expert tensors (*_exps.weight): unset = as dtype, or MXFP4 (GGUF only: GGML's
  // blocks of 32, as GPT-OSS ships its experts), so a large MoE needs no F16 file first.
  std::optional<DType> experts_dtype;
  // "0.2" | "0.3": an OuteTTS speech-code LM (arch qwen2): the OuteTTS tokens
  // (tokenizer/outetts_tokens.h) follow the n_vocab synthetic ones; 0.3 is marked by the
  // chat template "outetts-0.3" as llama.cpp does. GGUF only.
  std::string outetts;
  // GGUF {arch}.pooling_type (-1: none written): an embedding model's pooling, llama.cpp's
  // numbering (1 mean, 2 cls, 3 last), as Qwen3-Embedding files carry 3.
  int32_t pooling_type = -1;
  uint64_t seed = 1;
  // Layers from quiet_from on write their attention and FFN output projections scaled by
  // quiet_scale: a deep model that stays near its first quiet_from layers, so that a draft
  // model made of those layers alone (the same options with --layers quiet_from: tensors
  // are seeded by name) agrees with it as often as the scale allows. -1: no layer is quiet.
  int32_t quiet_from = -1;
  float quiet_scale = 1.0f;
};

// The config the options describe (what loading the written model yields).
Expected<ModelConfig> random_model_config(const RandomModelOptions& o);
// out ending in ".gguf": a GGUF file; otherwise a directory (created if needed).
Status write_random_model(const RandomModelOptions& o, const std::string& out);

}  // namespace edge
