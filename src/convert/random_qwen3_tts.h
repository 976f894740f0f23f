// A Qwen3-TTS checkpoint directory with deterministic random weights, in Qwen's layout:
// config.json (model_type qwen3_tts, talker_config with its code_predictor_config, the
// CustomVoice speakers and languages), model.safetensors with Qwen's tensor names, and a
// byte-level BPE tokenizer as vocab.json + merges.txt + tokenizer_config.json (Qwen ships
// no tokenizer.json). `make-model --arch qwen3-tts` writes it; the defaults make a small
// model, and the 0.6B shapes are --layers 28 --dim 1024 --heads 16 --kv-heads 8
// --head-dim 128 --ffn 3072 --cp-layers 5 --codebook 2048 --text-dim 2048.
//
// Ids: the talker vocabulary is the codebook plus 1024 control rows, and every control,
// language and speaker id keeps its offset from the codebook in Qwen's 0.6B config
// (codec_pad = codebook + 100, ...), so with --codebook 2048 they are Qwen's own ids.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "formats/tensor.h"
#include "model/arch/qwen3_tts.h"

namespace edge {

struct RandomQwen3TtsOptions {
  int32_t n_layer = 2, n_embd = 64, n_head = 4, n_head_kv = 2, head_dim = 16, n_ff = 128;
  // Code predictor; 0: the talker's value (a different width adds small_to_mtp_projection).
  int32_t cp_n_layer = 2, cp_n_embd = 0, cp_n_ff = 0;
  int32_t codebook = 64;  // code predictor vocabulary (Qwen: 2048)
  int32_t n_code_groups = 16;
  int32_t text_hidden = 64;                 // text embedding width (Qwen: 2048)
  std::string model_type = "custom_voice";  // or "base": no speakers
  DType dtype = DType::BF16;                // as Qwen publishes; F32 | F16 | BF16
  uint64_t seed = 1;
};

// The config the options describe (text_vocab: the written tokenizer's size).
Expected<Qwen3TtsConfig> random_qwen3_tts_config(const RandomQwen3TtsOptions& o);
Status write_random_qwen3_tts(const RandomQwen3TtsOptions& o, const std::string& dir);

}  // namespace edge
