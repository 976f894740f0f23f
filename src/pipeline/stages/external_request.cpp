#include "pipeline/stages/external_request.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/base64.h"

namespace edge::pipeline {

using nlohmann::json;

namespace {

const PortValue* input(const std::map<std::string, PortValue>& inputs, const char* port) {
  auto it = inputs.find(port);
  return it == inputs.end() || it->second.empty() ? nullptr : &it->second;
}

// The client's settings where they came with the request, else greedy with the stage's
// token limit. return_tokens asks llama.cpp-style servers for the generated ids (ours
// ignores it); llama-server's OpenAI streams carry ids only inside logprobs: asked for as
// "logprobs" and, on completions, as llama.cpp's own "n_probs" (some versions read only it).
json sampling_body(const ExternalRequestSettings& s, const RequestParams* params, bool chat) {
  json body = {
      {"max_tokens", s.max_tokens}, {"stream", true}, {"temperature", 0}, {"return_tokens", true}};
  if (params) {
    const SamplingParams& sp = params->sampling;
    body["max_tokens"] = params->max_tokens;
    body["temperature"] = sp.temperature;
    body["top_p"] = sp.top_p;
    body["top_k"] = sp.top_k;
    body["min_p"] = sp.min_p;
    body["seed"] = static_cast<int64_t>(sp.seed);  // the API takes a signed 64-bit seed
    body["presence_penalty"] = sp.presence_penalty;
    body["frequency_penalty"] = sp.frequency_penalty;
    body["repeat_penalty"] = sp.repeat_penalty;
    if (!params->stop.empty()) body["stop"] = params->stop;
    if (params->ignore_eos) body["ignore_eos"] = true;
  }
  if (s.flavour == ServerFlavour::kLlamaServer) {
    if (chat) {
      body["logprobs"] = true;  // a boolean on the chat endpoint
    } else {
      body["logprobs"] = body["n_probs"] = 1;
    }
  }
  return body;
}

// A media file as an OpenAI content part: images as data: URIs, clips as input_audio.
Expected<json> media_part(const ExternalRequestSettings& s, const PortValue& v, const char* port) {
  if (v.encoded.empty())
    return Status::invalid_argument(fmt::format(
        "stage '{}': input '{}' arrived decoded ({}); the backend takes the file itself (route a "
        "graph input read from a file to it)",
        s.stage, port,
        v.rows > 0         ? "embedding rows"
        : v.pixels.empty() ? "PCM samples"
                           : "pixels"));
  if (std::string_view(port) == "audio") {
    if (v.encoding != "wav")
      return Status::invalid_argument(fmt::format(
          "stage '{}': audio input is '{}', the chat API carries WAV", s.stage, v.encoding));
    return json{{"type", "input_audio"},
                {"input_audio", {{"data", base64(v.encoded)}, {"format", "wav"}}}};
  }
  if (v.encoding != "png" && v.encoding != "jpeg")
    return Status::invalid_argument(
        fmt::format("stage '{}': image input is '{}', not a PNG or JPEG file", s.stage,
                    v.encoding.empty() ? "unknown" : v.encoding));
  const std::string url = "data:image/" + v.encoding + ";base64," + base64(v.encoded);
  return json{{"type", "image_url"}, {"image_url", {{"url", url}}}};
}

// The conversation port's value: {"messages": [...]} (as serve --pipeline passes a client's
// request) or the messages array itself.
Expected<json> conversation(const ExternalRequestSettings& s, const PortValue& chat) {
  json j = json::parse(chat.text, nullptr, /*allow_exceptions=*/false);
  if (j.is_array()) j = json{{"messages", std::move(j)}};
  if (j.is_discarded() || !j.is_object() || !j.contains("messages") || !j["messages"].is_array() ||
      j["messages"].empty())
    return Status::invalid_argument(fmt::format(
        "stage '{}': input 'chat' is not JSON with a non-empty \"messages\" array", s.stage));
  return json{{"messages", std::move(j["messages"])}};
}

}  // namespace

Expected<ExternalRequest> external_request(const ExternalRequestSettings& s,
                                           const std::map<std::string, PortValue>& inputs,
                                           const RequestParams* params) {
  const PortValue* chat = input(inputs, "chat");
  const PortValue* prompt = input(inputs, "prompt");
  const PortValue* image = input(inputs, "image");
  const PortValue* audio = input(inputs, "audio");
  if (input(inputs, "media"))
    return Status::unsupported(fmt::format(
        "stage '{}': media rows cannot be sent to an external server (it takes the image or clip "
        "file: a chat.generate@1 stage on external.openai.multimodal.v1)",
        s.stage));
  if ((image || audio) && !s.media)
    return Status::unsupported(fmt::format(
        "stage '{}': this backend has no media encoders (external.openai.multimodal.v1 with a "
        "projector artifact has)",
        s.stage));
  if (chat) {
    if (prompt || image || audio)
      return Status::invalid_argument(fmt::format(
          "stage '{}': a conversation ('chat') comes alone: its media are parts of its messages",
          s.stage));
    ASSIGN_OR_RETURN(json body, conversation(s, *chat));
    body.update(sampling_body(s, params, true));
    return ExternalRequest{"/v1/chat/completions", body.dump()};
  }
  if (!prompt) return Status::invalid_argument(fmt::format("stage '{}': no prompt", s.stage));
  if (!image && !audio) {
    json body = sampling_body(s, params, false);
    if (!prompt->tokens.empty())
      body["prompt"] = prompt->tokens;
    else
      body["prompt"] = prompt->text;
    return ExternalRequest{"/v1/completions", body.dump()};
  }
  if (!prompt->tokens.empty())
    return Status::invalid_argument(fmt::format(
        "stage '{}': a prompt beside media goes in a chat message as text, not as token ids",
        s.stage));
  json content = json::array();
  if (image) {
    ASSIGN_OR_RETURN(json part, media_part(s, *image, "image"));
    content.push_back(std::move(part));
  }
  if (audio) {
    ASSIGN_OR_RETURN(json part, media_part(s, *audio, "audio"));
    content.push_back(std::move(part));
  }
  content.push_back({{"type", "text"}, {"text", prompt->text}});
  json body = {{"messages", json::array({{{"role", "user"}, {"content", std::move(content)}}})}};
  body.update(sampling_body(s, params, true));
  return ExternalRequest{"/v1/chat/completions", body.dump()};
}

}  // namespace edge::pipeline
