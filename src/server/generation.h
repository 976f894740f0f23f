// Drives the engine requests of one API request (its n choices, one session) and turns
// their stream chunks into API-level events: parsed deltas (content, reasoning, tool
// calls), logprobs, finish reasons, usage and latency metrics. Streaming and
// non-streaming handlers both consume these events.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "edge/engine.h"
#include "server/api_error.h"
#include "server/choice_output.h"
#include "server/lifecycle.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/openai_response.h"

namespace edge::server {

struct OutputSetup {
  bool split_reasoning = false;           // chat: <think> -> reasoning_content
  bool reasoning_open = false;            // the prompt opened <think>
  const nlohmann::json* tools = nullptr;  // parse tool calls (null: do not)
  bool harmony = false;                   // the model speaks harmony (ChatPrompt::Rendered)
  // Harmony text the prompt already wrote of the reply (a forced call's header): the
  // parser reads it first, so the generated body lands in that message.
  std::string harmony_prefix;
};

struct ChoiceEvent {
  int choice = 0;
  OutputDelta delta;
  std::vector<TokenLogprob> logprobs;
  std::vector<int32_t> tokens;  // the token ids behind this event's text
  std::string finish_reason;    // set on the choice's last event
};

class Generation {
 public:
  using Clock = std::chrono::steady_clock;
  // Opens a session and submits one engine request per choice. The engine's refusal
  // (KV budget, queue full, bad values) comes back as an ApiError (429 / 503 / 400).
  // `media`: rows spliced into the prompt (every choice shares them). `chat`: the
  // conversation for an engine that forwards_chat() (GenerateRequest::chat).
  static std::optional<ApiError> start(Engine& engine, const std::vector<int32_t>& prompt,
                                       const CommonRequest& req, const OutputSetup& setup,
                                       ServerMetrics& metrics, Clock::time_point arrived,
                                       std::unique_ptr<Generation>& out,
                                       const std::vector<MediaEmbedding>& media = {},
                                       const std::string& chat = {});
  ~Generation();  // cancels whatever is still running and closes the session

  // A drain's deadline cancels the generation (poll() then reports a 503 error).
  void watch_drain(const Lifecycle* lifecycle) { lifecycle_ = lifecycle; }

  enum class Poll { kEvent, kIdle, kDone, kError };
  // Waits up to `timeout` for the next event of any unfinished choice.
  Poll poll(ChoiceEvent& ev, std::chrono::milliseconds timeout);
  const ApiError& error() const { return error_; }
  void cancel();  // the client went away
  Usage usage() const { return usage_; }
  int n_choices() const { return static_cast<int>(choices_.size()); }

 private:
  struct Choice {
    RequestHandle handle;
    ChoiceOutput output;
    bool done = false;
    Clock::time_point last_token;
    int64_t n_tokens = 0;  // generated so far (usage when the engine reports none)
  };
  Generation(Engine& engine, SessionId session, ServerMetrics& metrics, Clock::time_point arrived)
      : engine_(engine), session_(session), metrics_(metrics), arrived_(arrived) {}
  Poll on_chunk(int index, StreamChunk chunk, ChoiceEvent& ev);
  void record_tokens(Choice& c, size_t n);

  Engine& engine_;
  SessionId session_;
  ServerMetrics& metrics_;
  const Lifecycle* lifecycle_ = nullptr;
  Clock::time_point arrived_;
  std::vector<Choice> choices_;
  size_t cursor_ = 0;
  bool first_token_seen_ = false;
  bool closed_ = false;
  Usage usage_;
  ApiError error_;
};

// Runs a generation to the end and collects each choice (non-streaming responses). While
// waiting it asks `client_gone` (every ~50 ms): true cancels the generation at once (its KV
// freed) and returns a 499 "client closed request" error.
std::optional<ApiError> collect_all(Generation& g, std::vector<ChoiceResult>& out,
                                    const std::function<bool()>& client_gone = {});

}  // namespace edge::server
