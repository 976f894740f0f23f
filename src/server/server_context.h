// What every endpoint handler shares (internal to src/server).
#pragma once

#include <httplib.h>

#include <optional>

#include "edge/engine.h"
#include "server/api_error.h"
#include "server/chat_prompt.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/openai_request.h"

namespace edge::server {

struct ServerContext {
  Engine& engine;
  ServerOptions options;
  ServingLimits limits;
  ServerMetrics metrics;
  std::optional<ChatPrompt> chat;  // empty when the model has no tokenizer
};

void send_json(httplib::Response& res, int status, const nlohmann::json& body);
void send_error(httplib::Response& res, const ApiError& e);

void handle_chat_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_models(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_tokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_detokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_metrics(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

}  // namespace edge::server
