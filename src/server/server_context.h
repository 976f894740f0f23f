// What every endpoint handler shares (internal to src/server).
#pragma once

#include <httplib.h>

#include <optional>

#include "edge/engine.h"
#include "pipeline/graph/executor.h"
#include "pipeline/prebuilt/speech_graph.h"
#include "server/api_error.h"
#include "server/chat_prompt.h"
#include "server/client_limits.h"
#include "server/http_server.h"
#include "server/lifecycle.h"
#include "server/media_request.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/structured_output.h"

namespace edge::server {

struct ServerContext {
  ServerOptions options;
  ServingLimits limits;
  ServerMetrics metrics;
  Lifecycle lifecycle;
  ClientLimiter clients;
  // Set once by attach() before the lifecycle turns ready; handlers past the readiness
  // check (every route but the probes) may use them.
  Engine* engine_ptr = nullptr;
  // The graph being served (`serve -m` serves a one-stage graph); its text stage's engine
  // is engine_ptr. Null only for a server attached straight to an engine (tests).
  pipeline::PipelineRuntime* pipeline = nullptr;
  // When the graph's text stage runs in another process: the Engine API over the graph.
  std::unique_ptr<Engine> graph_engine;
  std::optional<ChatPrompt> chat;  // empty when the model has no tokenizer
  // The speech graph behind /v1/audio/speech (input "text", output "audio"); null: none.
  // Set by attach_speech() before the server turns ready.
  pipeline::PipelineRuntime* speech = nullptr;
  pipeline::SpeechFigureSet speech_figures;  // per utterance served: TTFA, RTF, underruns
  SpeechVoices speech_voices;  // the speech model's named speakers and languages, if any
  // Image/audio encoders (serve --mmproj); null: media parts are refused. attach_media().
  std::shared_ptr<MediaEncoders> media;
  GrammarCache grammars;  // structured outputs: compiled grammars, the tokenizer's trie

  Engine& engine() const { return *engine_ptr; }
};

void send_json(httplib::Response& res, int status, const nlohmann::json& body);
void send_error(httplib::Response& res, const ApiError& e);
// The 503 for a server that is loading or draining.
ApiError not_ready_error(Lifecycle::State state);

void handle_chat_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_models(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
// POST /v1/embeddings and POST /v1/rerank (embedding_endpoints.cpp).
void handle_embeddings(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_rerank(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_tokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_detokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
// POST /v1/audio/speech (speech_endpoint.cpp).
void handle_speech(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
// GET /v1/audio/voices: the voices /v1/audio/speech takes (speech_endpoint.cpp).
void handle_voices(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_metrics(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
// GET /v1/pipeline: the served graph's stages, reservations, measured RSS, placement.
void handle_pipeline(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
// /health/live; /health/ready and /health (readiness).
void handle_liveness(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_readiness(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

}  // namespace edge::server
