// Writes a Qwen3-TTS HF checkpoint (config.json + model.safetensors, F32) as the GGUF that
// qwen3-tts.cpp's scripts/convert_tts_to_gguf.py would write (its tensor names and the
// metadata keys its loader reads).
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "formats/hf_config.h"

using namespace edge;

static std::string map_name(const std::string& hf) {
  static const std::pair<const char*, const char*> fixed[] = {
      {"talker.model.codec_embedding.weight", "talker.codec_embd.weight"},
      {"talker.model.text_embedding.weight", "talker.text_embd.weight"},
      {"talker.codec_head.weight", "talker.codec_head.weight"},
      {"talker.model.norm.weight", "talker.output_norm.weight"},
      {"talker.text_projection.linear_fc1.weight", "talker.text_proj.fc1.weight"},
      {"talker.text_projection.linear_fc1.bias", "talker.text_proj.fc1.bias"},
      {"talker.text_projection.linear_fc2.weight", "talker.text_proj.fc2.weight"},
      {"talker.text_projection.linear_fc2.bias", "talker.text_proj.fc2.bias"},
      {"talker.code_predictor.model.norm.weight", "code_pred.output_norm.weight"},
      {"talker.code_predictor.small_to_mtp_projection.weight", "code_pred.mtp_proj.weight"},
      {"talker.code_predictor.small_to_mtp_projection.bias", "code_pred.mtp_proj.bias"}};
  for (auto& [a, b] : fixed)
    if (hf == a) return b;
  static const std::pair<const char*, const char*> parts[] = {
      {"input_layernorm", "attn_norm"},    {"self_attn.q_proj", "attn_q"},
      {"self_attn.k_proj", "attn_k"},      {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_output"}, {"self_attn.q_norm", "attn_q_norm"},
      {"self_attn.k_norm", "attn_k_norm"}, {"post_attention_layernorm", "ffn_norm"},
      {"mlp.gate_proj", "ffn_gate"},       {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"}};
  static const std::regex layer(R"(talker\.(code_predictor\.)?model\.layers\.(\d+)\.(.+)\.weight)");
  std::smatch m;
  if (std::regex_match(hf, m, layer)) {
    for (auto& [a, b] : parts)
      if (m[3] == a)
        return std::string(m[1].matched ? "code_pred" : "talker") + ".blk." + std::string(m[2]) +
               "." + b + ".weight";
  }
  static const std::regex emb(R"(talker\.code_predictor\.model\.codec_embedding\.(\d+)\.weight)");
  if (std::regex_match(hf, m, emb)) return "code_pred.codec_embd." + std::string(m[1]) + ".weight";
  static const std::regex head(R"(talker\.code_predictor\.lm_head\.(\d+)\.weight)");
  if (std::regex_match(hf, m, head)) return "code_pred.lm_head." + std::string(m[1]) + ".weight";
  return "";
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: to_port_gguf CHECKPOINT_DIR OUT.gguf\n");
    return 2;
  }
  auto d = HfModelDir::open(argv[1]);
  if (!d.ok()) {
    std::fprintf(stderr, "%s\n", d.status().to_string().c_str());
    return 1;
  }
  const nlohmann::json& c = d->config;
  const nlohmann::json& t = c["talker_config"];
  const nlohmann::json& p = t["code_predictor_config"];
  GgufWriter w;
  const std::string a = "qwen3-tts";
  w.set_string("general.architecture", a);
  w.set_string("general.name", "random");
  w.set_string(a + ".tokenizer_type", c["tokenizer_type"]);
  w.set_string(a + ".model_size", c["tts_model_size"]);
  w.set_string(a + ".model_type", c["tts_model_type"]);
  w.set_u32(a + ".num_code_groups", t["num_code_groups"]);
  w.set_u32(a + ".talker.embedding_length", t["hidden_size"]);
  w.set_u32(a + ".talker.feed_forward_length", t["intermediate_size"]);
  w.set_u32(a + ".talker.block_count", t["num_hidden_layers"]);
  w.set_u32(a + ".talker.attention.head_count", t["num_attention_heads"]);
  w.set_u32(a + ".talker.attention.head_count_kv", t["num_key_value_heads"]);
  w.set_u32(a + ".talker.attention.key_length", t["head_dim"]);
  w.set_u32(a + ".talker.vocab_size", t["vocab_size"]);
  w.set_u32(a + ".talker.text_vocab_size", t["text_vocab_size"]);
  w.set_u32(a + ".talker.text_hidden_size", t["text_hidden_size"]);
  w.set_u32(a + ".talker.context_length", t["max_position_embeddings"]);
  w.set_f32(a + ".talker.rope.freq_base", t["rope_theta"]);
  w.set_f32(a + ".talker.attention.layer_norm_rms_epsilon", t["rms_norm_eps"]);
  w.set_u32(a + ".talker.position_id_per_seconds", 13);
  w.set_i32_array(a + ".talker.rope.mrope_section",
                  t["rope_scaling"]["mrope_section"].get<std::vector<int32_t>>());
  w.set_bool(a + ".talker.mrope_interleaved", t["rope_scaling"]["interleaved"]);
  w.set_u32(a + ".code_pred.embedding_length", p["hidden_size"]);
  w.set_u32(a + ".code_pred.feed_forward_length", p["intermediate_size"]);
  w.set_u32(a + ".code_pred.block_count", p["num_hidden_layers"]);
  w.set_u32(a + ".code_pred.attention.head_count", p["num_attention_heads"]);
  w.set_u32(a + ".code_pred.attention.head_count_kv", p["num_key_value_heads"]);
  w.set_u32(a + ".code_pred.attention.key_length", p["head_dim"]);
  w.set_u32(a + ".code_pred.vocab_size", p["vocab_size"]);
  w.set_u32(a + ".code_pred.context_length", p["max_position_embeddings"]);
  w.set_f32(a + ".code_pred.rope.freq_base", p["rope_theta"]);
  w.set_f32(a + ".code_pred.attention.layer_norm_rms_epsilon", p["rms_norm_eps"]);
  w.set_u32(a + ".codec.pad_id", t["codec_pad_id"]);
  w.set_u32(a + ".codec.bos_id", t["codec_bos_id"]);
  w.set_u32(a + ".codec.eos_id", t["codec_eos_token_id"]);
  w.set_u32(a + ".codec.think_id", t["codec_think_id"]);
  w.set_u32(a + ".codec.nothink_id", t["codec_nothink_id"]);
  w.set_u32(a + ".codec.think_bos_id", t["codec_think_bos_id"]);
  w.set_u32(a + ".codec.think_eos_id", t["codec_think_eos_id"]);
  std::vector<std::string> lang_names, spk_names, spk_dialects;
  std::vector<int32_t> lang_ids, spk_ids;
  for (auto& [k, v] : t["codec_language_id"].items())
    lang_names.push_back(k), lang_ids.push_back(v);
  w.set_string_array(a + ".codec.language_names", lang_names);
  w.set_i32_array(a + ".codec.language_ids", lang_ids);
  w.set_u32(a + ".text.im_start_id", c["im_start_token_id"]);
  w.set_u32(a + ".text.im_end_id", c["im_end_token_id"]);
  w.set_u32(a + ".text.tts_pad_id", c["tts_pad_token_id"]);
  w.set_u32(a + ".text.tts_bos_id", c["tts_bos_token_id"]);
  w.set_u32(a + ".text.tts_eos_id", c["tts_eos_token_id"]);
  for (auto& [k, v] : t["spk_id"].items()) {
    spk_names.push_back(k), spk_ids.push_back(v);
    const auto& dl = t["spk_is_dialect"][k];
    spk_dialects.push_back(dl.is_string() ? dl.get<std::string>() : "");
  }
  if (!spk_names.empty()) {
    w.set_string_array(a + ".codec.speaker_names", spk_names);
    w.set_i32_array(a + ".codec.speaker_ids", spk_ids);
    w.set_string_array(a + ".codec.speaker_dialects", spk_dialects);
  }
  for (const TensorView& v : d->weights.tensors().all()) {
    const std::string name = map_name(v.name);
    if (name.empty()) {
      std::fprintf(stderr, "unmapped tensor %s\n", v.name.c_str());
      return 1;
    }
    Status s = w.add_tensor(name, v.dtype, v.shape, v.data, v.nbytes);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.to_string().c_str());
      return 1;
    }
  }
  Status s = w.write(argv[2]);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    return 1;
  }
  return 0;
}
