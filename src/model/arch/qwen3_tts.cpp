// Qwen3-TTS talker and code predictor: config.json, speakers, languages, tensor names.
#include "model/arch/qwen3_tts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "model/arch/common.h"

namespace edge {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return s;
}

// A Qwen3-style decoder from its config object: q/k RMSNorm per head, NeoX RoPE, SwiGLU,
// no biases, full attention. `what` names the object in errors.
Expected<ModelConfig> decoder_config(const nlohmann::json& j, const char* arch, const char* what) {
  if (!j.is_object())
    return Status::invalid_format(fmt::format("config.json: '{}' must be an object", what));
  ModelConfig c;
  c.arch = arch;
  Status st = hf_common_hparams(j, /*tied_default=*/false, &c);
  if (!st.ok()) return st.with_context(what);
  const std::string act = j.value("hidden_act", std::string("silu"));
  if (act != "silu")
    return Status::unsupported(
        fmt::format("config.json: {}.hidden_act '{}' (silu only)", what, act));
  ASSIGN_OR_RETURN(bool attn_bias, json_bool(j, "attention_bias", false));
  if (attn_bias)
    return Status::unsupported(fmt::format("config.json: {}.attention_bias true", what));
  ASSIGN_OR_RETURN(bool sliding, json_bool(j, "use_sliding_window", false));
  if (sliding)
    return Status::unsupported(fmt::format("config.json: {}.use_sliding_window true", what));
  c.rope_style = RopeStyle::kNeox;
  c.qk_norm = true;
  c.tied_embeddings = false;
  return c;
}

Expected<int32_t> id_field(const nlohmann::json& j, const char* key, int32_t def,
                           const char* what) {
  ASSIGN_OR_RETURN(int64_t v, json_int(j, key, def));
  if (v < 0 || v > INT32_MAX)
    return Status::invalid_format(fmt::format("config.json: {}.{} = {}", what, key, v));
  return static_cast<int32_t>(v);
}

// An id of the speaker/language maps: a number, or (some exports) a one-element list.
Expected<int32_t> map_id(const nlohmann::json& v, const std::string& where) {
  const nlohmann::json* x = &v;
  if (v.is_array() && v.size() == 1) x = &v[0];
  if (!x->is_number_integer() || x->get<int64_t>() < 0 || x->get<int64_t>() > INT32_MAX)
    return Status::invalid_format(
        fmt::format("config.json: {} must be a non-negative integer id", where));
  return static_cast<int32_t>(x->get<int64_t>());
}

Status read_speakers_languages(const nlohmann::json& t, Qwen3TtsConfig* c) {
  if (auto it = t.find("codec_language_id"); it != t.end() && !it->is_null()) {
    if (!it->is_object())
      return Status::invalid_format(
          "config.json: talker_config.codec_language_id must be an object");
    for (const auto& [name, v] : it->items()) {
      ASSIGN_OR_RETURN(int32_t id, map_id(v, "talker_config.codec_language_id." + name));
      c->languages.push_back({lower(name), id});
    }
  }
  const nlohmann::json dialects = t.value("spk_is_dialect", nlohmann::json::object());
  if (auto it = t.find("spk_id"); it != t.end() && !it->is_null()) {
    if (!it->is_object())
      return Status::invalid_format("config.json: talker_config.spk_id must be an object");
    for (const auto& [name, v] : it->items()) {
      Qwen3TtsSpeaker s;
      s.name = lower(name);
      ASSIGN_OR_RETURN(s.codec_id, map_id(v, "talker_config.spk_id." + name));
      if (dialects.is_object() && dialects.contains(name) && dialects[name].is_string()) {
        s.dialect = lower(dialects[name].get<std::string>());
        if (!c->find_language(s.dialect))
          return Status::invalid_format(fmt::format(
              "config.json: speaker '{}' speaks dialect '{}', which codec_language_id lacks", name,
              s.dialect));
      }
      c->speakers.push_back(std::move(s));
    }
  }
  return Status();
}

Status read_mrope(const nlohmann::json& t, Qwen3TtsConfig* c) {
  auto it = t.find("rope_scaling");
  if (it == t.end() || !it->is_object() || !it->contains("mrope_section")) return Status();
  const nlohmann::json& sec = (*it)["mrope_section"];
  if (!sec.is_array())
    return Status::invalid_format(
        "config.json: talker_config.rope_scaling.mrope_section must be a list");
  int64_t sum = 0;
  for (const nlohmann::json& v : sec) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      return Status::invalid_format(
          "config.json: talker_config.rope_scaling.mrope_section holds a non-integer");
    c->mrope_section.push_back(static_cast<int32_t>(v.get<int64_t>()));
    sum += v.get<int64_t>();
  }
  // The sections split the head_dim / 2 frequencies among the temporal, height and width
  // streams; with equal streams any split is plain RoPE, but a split that does not cover
  // the head is a file we would misread.
  if (sum != c->talker.head_dim / 2)
    return Status::invalid_format(fmt::format(
        "config.json: talker_config.rope_scaling.mrope_section sums to {}, head_dim / 2 is {}", sum,
        c->talker.head_dim / 2));
  c->mrope_interleaved = it->value("interleaved", false);
  return Status();
}

Status check_ids(const Qwen3TtsConfig& c) {
  const int32_t v = c.talker.n_vocab;
  const Qwen3TtsCodecIds& k = c.codec;
  for (auto [name, id] : {std::pair{"codec_pad_id", k.pad},
                          {"codec_bos_id", k.bos},
                          {"codec_eos_token_id", k.eos},
                          {"codec_think_id", k.think},
                          {"codec_nothink_id", k.nothink},
                          {"codec_think_bos_id", k.think_bos},
                          {"codec_think_eos_id", k.think_eos}})
    if (id >= v)
      return Status::invalid_format(fmt::format(
          "config.json: talker_config.{} = {} outside the codec vocabulary of {}", name, id, v));
  for (const Qwen3TtsSpeaker& s : c.speakers)
    if (s.codec_id >= v)
      return Status::invalid_format(
          fmt::format("config.json: speaker '{}' id {} outside the codec vocabulary of {}", s.name,
                      s.codec_id, v));
  for (const Qwen3TtsLanguage& l : c.languages)
    if (l.codec_id >= v)
      return Status::invalid_format(
          fmt::format("config.json: language '{}' id {} outside the codec vocabulary of {}", l.name,
                      l.codec_id, v));
  const Qwen3TtsTextIds& t = c.text;
  for (auto [name, id] : {std::pair{"tts_pad_token_id", t.tts_pad},
                          {"tts_bos_token_id", t.tts_bos},
                          {"tts_eos_token_id", t.tts_eos},
                          {"im_start_token_id", t.im_start},
                          {"im_end_token_id", t.im_end}})
    if (id >= c.text_vocab)
      return Status::invalid_format(fmt::format(
          "config.json: {} = {} outside the text vocabulary of {}", name, id, c.text_vocab));
  if (c.predictor.n_vocab > v)
    return Status::invalid_format(
        fmt::format("config.json: the codebook ({}) is larger than the codec vocabulary ({})",
                    c.predictor.n_vocab, v));
  if (c.n_code_groups < 2)
    return Status::invalid_format(
        fmt::format("config.json: num_code_groups {} < 2", c.n_code_groups));
  return Status();
}

}  // namespace

const Qwen3TtsSpeaker* Qwen3TtsConfig::find_speaker(const std::string& name) const {
  const std::string n = lower(name);
  for (const Qwen3TtsSpeaker& s : speakers)
    if (s.name == n) return &s;
  return nullptr;
}

const Qwen3TtsLanguage* Qwen3TtsConfig::find_language(const std::string& name) const {
  const std::string n = lower(name);
  for (const Qwen3TtsLanguage& l : languages)
    if (l.name == n) return &l;
  return nullptr;
}

Expected<Qwen3TtsConfig> qwen3_tts_config_from_hf(const nlohmann::json& j) {
  try {
    if (j.value("model_type", std::string()) != "qwen3_tts")
      return Status::invalid_format("config.json: model_type is not qwen3_tts");
    auto t_it = j.find("talker_config");
    if (t_it == j.end()) return Status::invalid_format("config.json: no talker_config");
    const nlohmann::json& t = *t_it;
    Qwen3TtsConfig c;
    ASSIGN_OR_RETURN(c.talker, decoder_config(t, "qwen3-tts-talker", "talker_config"));
    auto p_it = t.find("code_predictor_config");
    if (p_it == t.end())
      return Status::invalid_format("config.json: no talker_config.code_predictor_config");
    ASSIGN_OR_RETURN(c.predictor,
                     decoder_config(*p_it, "qwen3-tts-code-predictor", "code_predictor_config"));
    ASSIGN_OR_RETURN(int64_t tv, json_required_int(t, "text_vocab_size"));
    ASSIGN_OR_RETURN(int64_t th, json_required_int(t, "text_hidden_size"));
    ASSIGN_OR_RETURN(int64_t groups, json_int(t, "num_code_groups", 32));
    ASSIGN_OR_RETURN(int64_t p_groups, json_int(*p_it, "num_code_groups", groups));
    if (tv <= 0 || tv > INT32_MAX || th <= 0 || th > (1 << 20) || groups <= 0 || groups > 64)
      return Status::invalid_format(fmt::format(
          "config.json: talker_config text_vocab_size {}, text_hidden_size {}, num_code_groups {}",
          tv, th, groups));
    if (p_groups != groups)
      return Status::invalid_format(fmt::format(
          "config.json: code_predictor_config.num_code_groups {} differs from the talker's {}",
          p_groups, groups));
    c.text_vocab = static_cast<int32_t>(tv);
    c.text_hidden = static_cast<int32_t>(th);
    c.n_code_groups = static_cast<int32_t>(groups);
    const char* tc = "talker_config";
    ASSIGN_OR_RETURN(c.codec.pad, id_field(t, "codec_pad_id", c.codec.pad, tc));
    ASSIGN_OR_RETURN(c.codec.bos, id_field(t, "codec_bos_id", c.codec.bos, tc));
    ASSIGN_OR_RETURN(c.codec.eos, id_field(t, "codec_eos_token_id", c.codec.eos, tc));
    ASSIGN_OR_RETURN(c.codec.think, id_field(t, "codec_think_id", c.codec.think, tc));
    ASSIGN_OR_RETURN(c.codec.nothink, id_field(t, "codec_nothink_id", c.codec.nothink, tc));
    ASSIGN_OR_RETURN(c.codec.think_bos, id_field(t, "codec_think_bos_id", c.codec.think_bos, tc));
    ASSIGN_OR_RETURN(c.codec.think_eos, id_field(t, "codec_think_eos_id", c.codec.think_eos, tc));
    ASSIGN_OR_RETURN(c.text.tts_pad, id_field(j, "tts_pad_token_id", c.text.tts_pad, "config"));
    ASSIGN_OR_RETURN(c.text.tts_bos, id_field(j, "tts_bos_token_id", c.text.tts_bos, "config"));
    ASSIGN_OR_RETURN(c.text.tts_eos, id_field(j, "tts_eos_token_id", c.text.tts_eos, "config"));
    ASSIGN_OR_RETURN(c.text.im_start, id_field(j, "im_start_token_id", c.text.im_start, "config"));
    ASSIGN_OR_RETURN(c.text.im_end, id_field(j, "im_end_token_id", c.text.im_end, "config"));
    c.model_type = j.value("tts_model_type", std::string());
    c.model_size = j.value("tts_model_size", std::string());
    c.tokenizer_type = j.value("tokenizer_type", std::string());
    RETURN_IF_ERROR(read_speakers_languages(t, &c));
    RETURN_IF_ERROR(read_mrope(t, &c));
    RETURN_IF_ERROR(check_ids(c));
    return c;
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid_format(std::string("config.json: ") + e.what());
  }
}

namespace {

nlohmann::json decoder_json(const ModelConfig& c) {
  nlohmann::json j;
  j["hidden_size"] = c.n_embd;
  j["num_hidden_layers"] = c.n_layer;
  j["num_attention_heads"] = c.n_head;
  j["num_key_value_heads"] = c.n_head_kv;
  j["head_dim"] = c.head_dim;
  j["intermediate_size"] = c.n_ff;
  j["vocab_size"] = c.n_vocab;
  j["rms_norm_eps"] = c.norm_eps;
  j["rope_theta"] = c.layers.empty() ? 10000.0f : c.layers[0].rope_theta;
  j["max_position_embeddings"] = c.max_ctx;
  j["hidden_act"] = "silu";
  j["attention_bias"] = false;
  j["tie_word_embeddings"] = false;
  return j;
}

}  // namespace

nlohmann::json qwen3_tts_config_to_hf(const Qwen3TtsConfig& c) {
  nlohmann::json p = decoder_json(c.predictor);
  p["model_type"] = "qwen3_tts_talker_code_predictor";
  p["num_code_groups"] = c.n_code_groups;
  nlohmann::json t = decoder_json(c.talker);
  t["model_type"] = "qwen3_tts_talker";
  t["code_predictor_config"] = p;
  t["num_code_groups"] = c.n_code_groups;
  t["text_vocab_size"] = c.text_vocab;
  t["text_hidden_size"] = c.text_hidden;
  t["codec_pad_id"] = c.codec.pad;
  t["codec_bos_id"] = c.codec.bos;
  t["codec_eos_token_id"] = c.codec.eos;
  t["codec_think_id"] = c.codec.think;
  t["codec_nothink_id"] = c.codec.nothink;
  t["codec_think_bos_id"] = c.codec.think_bos;
  t["codec_think_eos_id"] = c.codec.think_eos;
  t["codec_language_id"] = nlohmann::json::object();
  for (const Qwen3TtsLanguage& l : c.languages) t["codec_language_id"][l.name] = l.codec_id;
  t["spk_id"] = nlohmann::json::object();
  t["spk_is_dialect"] = nlohmann::json::object();
  for (const Qwen3TtsSpeaker& s : c.speakers) {
    t["spk_id"][s.name] = s.codec_id;
    t["spk_is_dialect"][s.name] =
        s.dialect.empty() ? nlohmann::json(false) : nlohmann::json(s.dialect);
  }
  if (!c.mrope_section.empty())
    t["rope_scaling"] = {{"interleaved", c.mrope_interleaved},
                         {"mrope_section", c.mrope_section},
                         {"rope_type", "default"},
                         {"type", "default"}};
  nlohmann::json j;
  j["architectures"] = {"Qwen3TTSForConditionalGeneration"};
  j["model_type"] = "qwen3_tts";
  j["tokenizer_type"] = c.tokenizer_type;
  j["tts_model_size"] = c.model_size;
  j["tts_model_type"] = c.model_type;
  j["im_start_token_id"] = c.text.im_start;
  j["im_end_token_id"] = c.text.im_end;
  j["tts_pad_token_id"] = c.text.tts_pad;
  j["tts_bos_token_id"] = c.text.tts_bos;
  j["tts_eos_token_id"] = c.text.tts_eos;
  j["talker_config"] = t;
  return j;
}

std::string qwen3_tts_decoder_name(const std::string& hf, const std::string& prefix) {
  if (hf.rfind(prefix, 0) != 0) return "";
  const std::string rest = hf.substr(prefix.size());
  if (rest.rfind("layers.", 0) != 0 && rest != "norm.weight") return "";
  return hf_decoder_tensor_name("model." + rest, /*gemma_norms=*/false);
}

std::string qwen3_tts_hf_name_of(const std::string& canonical, const std::string& prefix) {
  const std::string hf = hf_decoder_name_of(canonical, /*gemma_norms=*/false);
  if (hf.rfind("model.layers.", 0) != 0 && hf != "model.norm.weight") return "";
  return prefix + hf.substr(6);
}

std::string qwen3_tts_predictor_embedding_name(int g) {
  return fmt::format("talker.code_predictor.model.codec_embedding.{}.weight", g);
}

std::string qwen3_tts_predictor_head_name(int g) {
  return fmt::format("talker.code_predictor.lm_head.{}.weight", g);
}

namespace {

// The layers and final norm of a Qwen3 decoder under `prefix`, by their HF names.
void require_decoder(const ModelConfig& c, const std::string& prefix, TensorSchema* s) {
  const int64_t e = c.n_embd, q = c.q_dim(), kv = c.kv_dim(), f = c.n_ff, hd = c.head_dim;
  for (int l = 0; l < c.n_layer; ++l) {
    const std::string p = fmt::format("{}layers.{}.", prefix, l);
    s->require(p + "input_layernorm.weight", {e});
    s->require(p + "self_attn.q_proj.weight", {q, e});
    s->require(p + "self_attn.k_proj.weight", {kv, e});
    s->require(p + "self_attn.v_proj.weight", {kv, e});
    s->require(p + "self_attn.o_proj.weight", {e, q});
    s->require(p + "self_attn.q_norm.weight", {hd});
    s->require(p + "self_attn.k_norm.weight", {hd});
    s->require(p + "post_attention_layernorm.weight", {e});
    s->require(p + "mlp.gate_proj.weight", {f, e});
    s->require(p + "mlp.up_proj.weight", {f, e});
    s->require(p + "mlp.down_proj.weight", {e, f});
  }
  s->require(prefix + "norm.weight", {e});
}

}  // namespace

TensorSchema qwen3_tts_schema(const Qwen3TtsConfig& c) {
  TensorSchema s;
  const int64_t h = c.talker.n_embd, th = c.text_hidden, ph = c.predictor.n_embd;
  s.require("talker.model.codec_embedding.weight", {c.talker.n_vocab, h});
  s.require("talker.model.text_embedding.weight", {c.text_vocab, th});
  s.require("talker.text_projection.linear_fc1.weight", {th, th});
  s.require("talker.text_projection.linear_fc1.bias", {th});
  s.require("talker.text_projection.linear_fc2.weight", {h, th});
  s.require("talker.text_projection.linear_fc2.bias", {h});
  s.require("talker.codec_head.weight", {c.talker.n_vocab, h});
  require_decoder(c.talker, kQwen3TtsTalkerPrefix, &s);
  require_decoder(c.predictor, kQwen3TtsPredictorPrefix, &s);
  for (int g = 0; g + 1 < c.n_code_groups; ++g) {
    s.require(qwen3_tts_predictor_embedding_name(g), {c.predictor.n_vocab, h});
    s.require(qwen3_tts_predictor_head_name(g), {c.predictor.n_vocab, ph});
  }
  if (c.has_projection()) {
    s.require("talker.code_predictor.small_to_mtp_projection.weight", {ph, h});
    s.require("talker.code_predictor.small_to_mtp_projection.bias", {ph});
  }
  return s;
}

}  // namespace edge
