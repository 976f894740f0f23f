// Qwen3-TTS (12 Hz) speech LM as Qwen publishes it: one Hugging Face directory
// (config.json, model.safetensors, vocab.json + merges.txt) holding two Qwen3-style decoders
// under "talker.":
//   * the talker (talker.model.*): input rows are sums of a projected text embedding and a
//     codec embedding; its head (talker.codec_head) predicts codebook 0 of each 12.5 Hz
//     frame, or the end of speech;
//   * the code predictor (talker.code_predictor.*): per frame, a fresh 5-layer decoder over
//     [talker hidden, embedding of codebook 0, embeddings of codebooks 1..g-1] that fills
//     codebooks 1..15 one at a time, each with its own embedding table and head.
// This file reads the hyper-parameters (config.json: talker_config and its
// code_predictor_config), the CustomVoice speakers and language ids, and names the tensors.
// docs/qwen3-tts.md ("Talker and code predictor") has the order of operations.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/config.h"
#include "model/tensor_schema.h"

namespace edge {

struct Qwen3TtsSpeaker {
  std::string name;      // lower case, as config.json spells it ("vivian")
  int32_t codec_id = 0;  // its row of the talker's codec embedding
  std::string dialect;   // spk_is_dialect: a codec_language_id key ("sichuan_dialect"), or ""
};

struct Qwen3TtsLanguage {
  std::string name;  // lower case ("english", "chinese", "beijing_dialect")
  int32_t codec_id = 0;
};

// Codec-side control ids (rows of the talker's codec embedding / columns of its head).
struct Qwen3TtsCodecIds {
  int32_t pad = 2148, bos = 2149, eos = 2150;
  int32_t think = 2154, nothink = 2155, think_bos = 2156, think_eos = 2157;
};

// Text-side ids (rows of the text embedding).
struct Qwen3TtsTextIds {
  int32_t tts_pad = 151671, tts_bos = 151672, tts_eos = 151673;
  int32_t im_start = 151644, im_end = 151645;
};

struct Qwen3TtsConfig {
  ModelConfig talker;         // n_vocab: the codec vocabulary (3072); arch "qwen3-tts-talker"
  ModelConfig predictor;      // n_vocab: one codebook (2048); arch "qwen3-tts-code-predictor"
  int32_t text_vocab = 0;     // text_vocab_size (151936)
  int32_t text_hidden = 0;    // text_hidden_size (2048): text embedding and projection width
  int32_t n_code_groups = 0;  // codebooks per frame (16)
  Qwen3TtsCodecIds codec;
  Qwen3TtsTextIds text;
  std::vector<Qwen3TtsSpeaker> speakers;    // spk_id (empty for Base)
  std::vector<Qwen3TtsLanguage> languages;  // codec_language_id
  std::string model_type;      // tts_model_type: "custom_voice", "base", "voice_design"
  std::string model_size;      // tts_model_size: "0b6", "1b7"
  std::string tokenizer_type;  // "qwen3_tts_tokenizer_12hz"
  // rope_scaling.mrope_section of the talker (sums to head_dim / 2) and its interleaving.
  // A speech prompt gives the three position streams the same index, so this reduces to
  // plain 1-D NeoX RoPE over the whole head; kept to write the config back.
  std::vector<int32_t> mrope_section;
  bool mrope_interleaved = false;

  // small_to_mtp_projection exists when the widths differ (1.7B: 2048 -> 1024).
  bool has_projection() const { return predictor.n_embd != talker.n_embd; }
  // Codebook-0 values the talker may emit: [0, predictor.n_vocab); the rest of its head
  // (control ids, speakers, languages) is masked during generation except codec.eos.
  int32_t codebook_size() const { return predictor.n_vocab; }
  const Qwen3TtsSpeaker* find_speaker(const std::string& name) const;    // case-insensitive
  const Qwen3TtsLanguage* find_language(const std::string& name) const;  // case-insensitive
};

// config.json of a Qwen3-TTS checkpoint (model_type "qwen3_tts"). Errors name the key.
Expected<Qwen3TtsConfig> qwen3_tts_config_from_hf(const nlohmann::json& j);
// The inverse, with the keys Qwen writes (for make-model's random checkpoints).
nlohmann::json qwen3_tts_config_to_hf(const Qwen3TtsConfig& c);

// HF tensor names and shapes of the talker and the code predictor (speaker encoder and
// other tensors of the file are not in it; the loader ignores them).
TensorSchema qwen3_tts_schema(const Qwen3TtsConfig& c);

// HF name -> canonical decoder name (blk.N.attn_q.weight, output_norm.weight, ...) of the
// decoder under `prefix` ("talker.model." or "talker.code_predictor.model."); "" for
// names outside that decoder's layers and final norm.
std::string qwen3_tts_decoder_name(const std::string& hf, const std::string& prefix);
// Canonical decoder name -> HF name under `prefix` (the inverse, for writers).
std::string qwen3_tts_hf_name_of(const std::string& canonical, const std::string& prefix);

inline constexpr const char* kQwen3TtsTalkerPrefix = "talker.model.";
inline constexpr const char* kQwen3TtsPredictorPrefix = "talker.code_predictor.model.";
// Per-codebook tables of the code predictor, g in [0, n_code_groups - 1): codebook g + 1.
std::string qwen3_tts_predictor_embedding_name(int g);  // [codebook, talker n_embd]
std::string qwen3_tts_predictor_head_name(int g);       // [codebook, predictor n_embd]

}  // namespace edge
