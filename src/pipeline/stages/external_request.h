// The HTTP request an external stage sends its OpenAI-compatible backend, built from the
// stage's inputs and the client's settings: POST /v1/completions for a prompt (text or token
// ids), POST /v1/chat/completions for a conversation (chat.generate@1 "chat": the client's
// messages, passed on as they came, image and audio parts included) or for a prompt with
// media files (one user message: the images, the clips, then the prompt's text). Both
// streamed; greedy unless the client's settings came with the request (serve --pipeline).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/status.h"
#include "edge/engine.h"
#include "pipeline/graph/stage_inputs.h"
#include "pipeline/stages/external_backend.h"

namespace edge::pipeline {

struct ExternalRequestSettings {
  std::string stage;  // for messages
  ServerFlavour flavour = ServerFlavour::kEdgeInfer;
  int32_t max_tokens = 256;  // when no client settings came with the request
  bool media = false;        // the backend has media encoders (external.openai.multimodal.v1)
};

struct ExternalRequest {
  std::string path;  // "/v1/completions" or "/v1/chat/completions"
  std::string body;  // JSON
};

// Refused, naming the stage: no prompt and no conversation; media for a backend without
// encoders, or media that arrived decoded (rows or pixels: the server takes the file);
// token ids beside media (a chat message carries text); a conversation that is not JSON
// with a "messages" array.
Expected<ExternalRequest> external_request(const ExternalRequestSettings& s,
                                           const std::map<std::string, PortValue>& inputs,
                                           const RequestParams* params);

}  // namespace edge::pipeline
