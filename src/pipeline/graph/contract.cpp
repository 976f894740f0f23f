#include "pipeline/graph/contract.h"

#include <fmt/format.h>

#include <cctype>

namespace edge::pipeline {

const char* modality_name(Modality m) {
  switch (m) {
    case Modality::kText:
      return "text";
    case Modality::kTokens:
      return "tokens";
    case Modality::kImage:
      return "image";
    case Modality::kAudio:
      return "audio";
    case Modality::kEmbeddings:
      return "embeddings";
    case Modality::kSpeechCodes:
      return "speech_codes";
  }
  return "?";
}

Expected<ContractRef> parse_contract_ref(const std::string& s) {
  const size_t at = s.rfind('@');
  if (at == std::string::npos || at == 0 || at + 1 == s.size())
    return Status::invalid_argument(fmt::format("contract '{}' is not name@version", s));
  ContractRef r;
  r.name = s.substr(0, at);
  const std::string v = s.substr(at + 1);
  for (char ch : v)
    if (!std::isdigit(static_cast<unsigned char>(ch)))
      return Status::invalid_argument(
          fmt::format("contract '{}': version '{}' is not a number", s, v));
  if (v.size() > 6)
    return Status::invalid_argument(fmt::format("contract '{}': version too large", s));
  r.version = std::stoi(v);
  if (r.version <= 0)
    return Status::invalid_argument(fmt::format("contract '{}': versions start at 1", s));
  return r;
}

const PortSpec* Contract::input(const std::string& port) const {
  for (const PortSpec& p : inputs)
    if (p.name == port) return &p;
  return nullptr;
}

const PortSpec* Contract::output(const std::string& port) const {
  for (const PortSpec& p : outputs)
    if (p.name == port) return &p;
  return nullptr;
}

namespace {

std::string port_json(const PortSpec& p, bool is_input) {
  nlohmann::ordered_json j;
  j["name"] = p.name;
  j["dtype"] = p.dtype;
  j["shape"] = p.shape;
  j["modality"] = modality_name(p.modality);
  if (is_input) j["required"] = p.required;
  j["streamed"] = p.streamed;
  if (!p.attributes.empty()) {
    nlohmann::ordered_json a;
    for (const auto& [k, v] : p.attributes) a[k] = v;
    j["attributes"] = a;
  }
  return j.dump();
}

std::string ports_json(const std::vector<PortSpec>& ports, bool is_input) {
  std::string s = "[";
  for (size_t i = 0; i < ports.size(); ++i)
    s += fmt::format("{}\n    {}", i ? "," : "", port_json(ports[i], is_input));
  return s + (ports.empty() ? "]" : "\n  ]");
}

}  // namespace

std::string contract_wire_json(const Contract& c) {
  return fmt::format(
      "{{\n  \"contract\": {},\n  \"summary\": {},\n  \"inputs\": {},\n  \"outputs\": {}\n}}\n",
      nlohmann::json(c.ref.str()).dump(), nlohmann::json(c.summary).dump(),
      ports_json(c.inputs, true), ports_json(c.outputs, false));
}

const std::vector<Contract>& builtin_contracts() {
  using M = Modality;
  // The decoders' output: 24 kHz mono 16-bit PCM, streamed.
  const PortSpec pcm_out{"pcm",  "s16", {"n_samples"}, M::kAudio, true, true,
                         {{"sample_rate", "24000"}, {"channels", "1"}, {"format", "s16le"}}};
  static const std::vector<Contract> contracts = {
      {{"text.generate", 1},
       "a language model: prompt tokens (and optional media embeddings spliced at their markers) "
       "in, "
       "generated tokens and their text out, streamed",
       {{"prompt", "i32", {"n_prompt"}, M::kTokens, true, false},
        {"media", "f32", {"n_media", "n_embd"}, M::kEmbeddings, false, false}},
       {{"tokens", "i32", {"n_generated"}, M::kTokens, true, true},
        {"text", "utf8", {"n_bytes"}, M::kText, true, true}}},
      // A model behind another server's OpenAI chat endpoint, its media encoders with it
      // (external.openai.multimodal.v1): the conversation as the client sent it, or a prompt
      // with media files; the server renders the template and encodes the media itself.
      {{"chat.generate", 1},
       "a chat model with its media encoders behind an OpenAI chat endpoint: the conversation "
       "(OpenAI messages as JSON, image and audio parts included) or a prompt with image and audio "
       "files in; generated tokens and their text out, streamed",
       {{"chat", "utf8", {"n_bytes"}, M::kText, false, false, {{"format", "openai-messages-json"}}},
        {"prompt", "i32", {"n_prompt"}, M::kTokens, false, false},
        {"image", "u8", {"n_bytes"}, M::kImage, false, false, {{"encoding", "png-or-jpeg-file"}}},
        {"audio", "u8", {"n_bytes"}, M::kAudio, false, false, {{"encoding", "wav-file"}}}},
       {{"tokens", "i32", {"n_generated"}, M::kTokens, true, true},
        {"text", "utf8", {"n_bytes"}, M::kText, true, true}}},
      {{"vision.encode", 1},
       "an image encoder with its projector: one image in, LM input embeddings out",
       {{"image", "u8", {"height", "width", "3"}, M::kImage, true, false}},
       {{"embeddings", "f32", {"n_media", "n_embd"}, M::kEmbeddings, true, false}}},
      {{"audio.encode", 1},
       "an audio encoder with its projector: 16 kHz mono PCM in, LM input embeddings out",
       {{"pcm",
         "f32",
         {"n_samples"},
         M::kAudio,
         true,
         false,
         {{"sample_rate", "16000"}, {"channels", "1"}, {"format", "f32le"}}}},
       {{"embeddings", "f32", {"n_media", "n_embd"}, M::kEmbeddings, true, false}}},
      {{"speech.codes", 1},
       "a speech-code language model: text in, audio codes out, streamed",
       {{"text", "utf8", {"n_bytes"}, M::kText, true, false}},
       {{"codes", "i32", {"n_frames"}, M::kSpeechCodes, true, true}}},
      {{"speech.codes", 2},
       "a speech-code language model: text and an optional voice (a speaker profile: its words "
       "with durations and audio codes) in, audio codes out, streamed",
       {{"text", "utf8", {"n_bytes"}, M::kText, true, false},
        {"voice", "utf8", {"n_bytes"}, M::kText, false, false}},
       {{"codes", "i32", {"n_frames"}, M::kSpeechCodes, true, true}}},
      {{"speech.codes", 3},
       "a multi-codebook speech-code model (Qwen3-TTS): text, an optional voice (a speaker the "
       "model names) and an optional language in; frames of n_groups codes (codebook 0 first) "
       "out as each frame completes, flattened frame after frame",
       {{"text", "utf8", {"n_bytes"}, M::kText, true, false},
        {"voice", "utf8", {"n_bytes"}, M::kText, false, false},
        {"language", "utf8", {"n_bytes"}, M::kText, false, false}},
       {{"codes", "i32", {"n_frames", "n_groups"}, M::kSpeechCodes, true, true}}},
      {{"audio.pcm", 1},
       "a vocoder: audio codes in, 24 kHz mono 16-bit PCM out, both streamed",
       {{"codes", "i32", {"n_frames"}, M::kSpeechCodes, true, true}},
       {pcm_out}},
      {{"audio.pcm", 2},
       "a multi-codebook codec decoder: frames of n_groups codes in (flattened, streamed), 24 kHz "
       "mono 16-bit PCM out, each frame's samples as soon as the frame arrives",
       {{"codes", "i32", {"n_frames", "n_groups"}, M::kSpeechCodes, true, true}},
       {pcm_out}},
  };
  return contracts;
}

const Contract* find_contract(const ContractRef& ref) {
  for (const Contract& c : builtin_contracts())
    if (c.ref == ref) return &c;
  return nullptr;
}

namespace {

bool symbolic(const std::string& dim) {
  return dim.empty() || !std::isdigit(static_cast<unsigned char>(dim[0]));
}

}  // namespace

std::string port_mismatch(const PortSpec& out, const PortSpec& in) {
  if (out.dtype != in.dtype) return fmt::format("dtype {} vs {}", out.dtype, in.dtype);
  if (out.modality != in.modality)
    return fmt::format("modality {} vs {}", modality_name(out.modality),
                       modality_name(in.modality));
  if (out.shape.size() != in.shape.size())
    return fmt::format("rank {} vs {}", out.shape.size(), in.shape.size());
  for (size_t i = 0; i < out.shape.size(); ++i)
    if (!symbolic(out.shape[i]) && !symbolic(in.shape[i]) && out.shape[i] != in.shape[i])
      return fmt::format("dimension {}: {} vs {}", i, out.shape[i], in.shape[i]);
  for (const auto& [k, v] : out.attributes)
    for (const auto& [k2, v2] : in.attributes)
      if (k == k2 && v != v2) return fmt::format("{} {} vs {}", k, v, v2);
  return "";
}

}  // namespace edge::pipeline
