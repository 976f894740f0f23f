// The OpenAI-compatible HTTP server over one Engine: /v1/models, /v1/completions,
// /v1/chat/completions (SSE streaming or not), /tokenize, /detokenize, /health, /metrics.
// Binds 127.0.0.1 unless told otherwise; with an API key every route but /health needs
// "Authorization: Bearer <key>". Errors are OpenAI-shaped JSON with a 4xx/5xx status.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/status.h"
#include "edge/engine.h"

namespace edge::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                  // 0: any free port (see HttpServer::port())
  std::string api_key;              // empty: no authentication
  std::string model_name;           // the id /v1/models reports and requests must name
  std::string chat_template;        // template source overriding the model's ("" : model's)
  size_t max_body_bytes = 4u << 20; // larger bodies get 413
  int http_threads = 64;            // connections served at once (streams hold one each)
};

class HttpServer {
 public:
  // The engine must outlive the server.
  static Expected<std::unique_ptr<HttpServer>> create(Engine& engine, const ServerOptions& options);
  ~HttpServer();

  // Binds the socket; afterwards port() is the real port (also for port 0).
  Status bind();
  int port() const;
  // Serves until stop() (from another thread or a signal handler's thread).
  Status run();
  void stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace edge::server
