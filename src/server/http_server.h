// The OpenAI-compatible HTTP server over one Engine: /v1/models, /v1/completions,
// /v1/chat/completions (SSE streaming or not), /tokenize, /detokenize, /metrics, and the
// probes /health/live (200 while the process serves HTTP), /health/ready and /health
// (200 once the engine is attached, 503 while loading or draining).
// Binds 127.0.0.1 unless told otherwise; with an API key every route but the probes needs
// "Authorization: Bearer <key>". Errors are OpenAI-shaped JSON with a 4xx/5xx status.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "edge/engine.h"
#include "pipeline/graph/executor.h"
#include "server/client_limits.h"

namespace edge::server {

struct MediaEncoders;  // server/media_request.h

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                  // 0: any free port (see HttpServer::port())
  std::string api_key;              // empty: no authentication
  // The ids clients may name (vLLM's --served-model-name): /v1/models lists them all,
  // responses report the first. Empty: "edge-infer".
  std::vector<std::string> model_names;
  std::string chat_template;        // template source overriding the model's ("" : model's)
  size_t max_body_bytes = 4u << 20; // larger bodies get 413
  int http_threads = 64;            // connections served at once (streams hold one each)
  ClientLimits client_limits;       // per client: requests in flight, tokens (0: unlimited)
  // /v1/audio/speech: DIR/VOICE.json is the speaker profile of voice VOICE (OuteTTS JSON);
  // OpenAI's voice names without a file speak with the model's own voice. "": none.
  std::string voices_dir;
  // /v1/embeddings: how the model's hidden states are pooled, "mean" | "cls" | "last";
  // "" takes the model file's pooling_type (mean where it has none).
  std::string pooling;
};

// The voices of a speech graph whose model names its speakers (Qwen3-TTS CustomVoice):
// `voice` in /v1/audio/speech is one of `speakers` (OpenAI's names speak with the first),
// `language` one of `languages` or "auto"; GET /v1/audio/voices lists them. Empty speakers
// and languages: a model with its own voice (OuteTTS: profiles from voices_dir).
struct SpeechVoices {
  std::vector<std::string> speakers;   // as the model spells them ("vivian")
  std::vector<std::string> languages;  // without "auto"
};

class HttpServer {
 public:
  // A server without an engine yet: once bound and running it answers the probes
  // (/health/ready: 503 "loading") and 503 to everything else until attach().
  static Expected<std::unique_ptr<HttpServer>> create(const ServerOptions& options);
  // create() and attach() in one. The engine must outlive the server.
  static Expected<std::unique_ptr<HttpServer>> create(Engine& engine, const ServerOptions& options);
  ~HttpServer();

  // Starts serving `engine` (it must outlive the server): the server is ready. Once only.
  Status attach(Engine& engine);
  // Serves a pipeline (it must outlive the server): the chat and completion endpoints
  // drive the engine of its text stage (in this process; or, in a worker or an external
  // server, the same Engine calls through the graph); /metrics and /v1/pipeline add its
  // stages' reservations. `serve -m MODEL` serves a one-stage graph this way.
  Status attach(pipeline::PipelineRuntime& graph);
  // Serves POST /v1/audio/speech from a speech graph (input "text", output "audio"; it must
  // outlive the server); /metrics adds its figures. Before attach().
  Status attach_speech(pipeline::PipelineRuntime& speech, SpeechVoices voices = {});
  // Accepts image (and audio) content parts with these encoders (serve --mmproj). Before
  // attach().
  Status attach_media(std::shared_ptr<MediaEncoders> encoders);

  // Binds the socket; afterwards port() is the real port (also for port 0).
  Status bind();
  int port() const;
  // Serves until stop() (from another thread or a signal handler's thread).
  Status run();
  void stop();
  // Graceful drain, from any thread (a SIGTERM): stops accepting connections, answers what
  // still arrives on open ones with 503, lets in-flight requests finish for up to `grace`
  // and then cancels their generations (streams end with an error event and [DONE]).
  // run() returns once the last request has ended. Returns at once.
  void drain(std::chrono::milliseconds grace);

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace edge::server
