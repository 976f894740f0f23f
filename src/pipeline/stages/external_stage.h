// The external.openai.text.v1 stage: text.generate@1 served by an out-of-process
// OpenAI-compatible server (our own `edge-infer serve`, or llama.cpp's llama-server where
// a user has one, e.g. a Vulkan build that places the model on an iGPU), started from its
// pinned binary (artifact role `server`) and model (role `model`); see external_backend.h
// for the process. Requests go out as streams (external_request.h: /v1/completions, or
// /v1/chat/completions for the multimodal backend's conversations and media files); the
// stage records the placement the backend reports, not the one the
// file asked for, and its RSS is the backend's process tree.
//
// A backend that dies ends the requests in flight with an explicit error naming the stage,
// the pid, the generation and how it ended; the next request starts generation + 1.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/graph/executor.h"
#include "pipeline/graph/stage_kind.h"

namespace edge::pipeline {

inline constexpr const char* kOpenAiTextBackend = "external.openai.text.v1";
// chat.generate@1 on a server started with the model and its media encoders (artifact role
// `projector`, passed as --mmproj to ours and to llama-server): conversations and prompts
// with image/audio files go to /v1/chat/completions, the files unchanged as data: URIs; the
// placement proof names where the vision encoder runs too.
inline constexpr const char* kOpenAiMultimodalBackend = "external.openai.multimodal.v1";

// Kind "external": any contract, served by another runtime (placement external, the stage
// names its backend); its reservation is declared.
extern const StageKind kExternalKind;

// Starts the backend (generation 1) and waits until it is ready. Refused, naming the stage:
// another backend or contract, a missing server or model artifact, a server that exits or
// is not ready in time. Artifacts are verified against their hashes by the plan, before.
Expected<std::unique_ptr<StageRunner>> start_external_stage(const PipelineSpec& p,
                                                            const StageSpec& s,
                                                            const PipelineRunOptions& o);

// Server-sent events as they arrive, in pieces of any size: each complete event's data
// (its "data:" lines joined by '\n') goes to on_data; comments (": ping") are skipped.
// Returns false as soon as on_data does (the rest is not parsed).
class SseReader {
 public:
  bool feed(std::string_view bytes, const std::function<bool(const std::string&)>& on_data);

 private:
  std::string line_, data_;
  bool has_data_ = false;
};

// Choice 0 of one /v1/completions stream chunk (its "text"), or of a /v1/chat/completions
// one (its "delta"'s "content").
struct CompletionDelta {
  std::string text;
  // Generated token ids where the server says them: `choices[0].tokens` (llama.cpp's name
  // for them, asked for with return_tokens) or the ids in llama.cpp's logprobs
  // (`logprobs.content[].id`). Our own server reports neither today, so its stage's
  // `tokens` port carries no ids (text only); nothing is re-tokenised here, which would
  // give ids the model did not generate.
  std::vector<int32_t> tokens;
  std::string finish_reason;  // non-empty on the chunk that ends the choice
  std::string error;          // an error object in the stream: the request failed
};
// `payload`: one event's data, other than "[DONE]".
Expected<CompletionDelta> parse_completion_chunk(const std::string& payload);

}  // namespace edge::pipeline
