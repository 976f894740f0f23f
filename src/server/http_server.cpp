#include "server/http_server.h"

#include "server/server_context.h"

namespace edge::server {

struct HttpServer::Impl {
  explicit Impl(Engine& engine) : ctx{engine, {}, {}, {}, std::nullopt} {}
  httplib::Server svr;
  ServerContext ctx;
  int port = -1;
};

namespace {

bool authorized(const ServerContext& ctx, const httplib::Request& req) {
  if (ctx.options.api_key.empty() || req.path == "/health") return true;
  return req.get_header_value("Authorization") == "Bearer " + ctx.options.api_key;
}

void add_routes(httplib::Server& svr, ServerContext& ctx) {
  using Req = httplib::Request;
  using Res = httplib::Response;
  svr.Post("/v1/chat/completions", [&ctx](const Req& q, Res& s) { handle_chat_completions(ctx, q, s); });
  svr.Post("/v1/completions", [&ctx](const Req& q, Res& s) { handle_completions(ctx, q, s); });
  svr.Get("/v1/models", [&ctx](const Req& q, Res& s) { handle_models(ctx, q, s); });
  svr.Post("/tokenize", [&ctx](const Req& q, Res& s) { handle_tokenize(ctx, q, s); });
  svr.Post("/detokenize", [&ctx](const Req& q, Res& s) { handle_detokenize(ctx, q, s); });
  svr.Get("/metrics", [&ctx](const Req& q, Res& s) { handle_metrics(ctx, q, s); });
  svr.Get("/health", [](const Req&, Res& s) { send_json(s, 200, {{"status", "ok"}}); });
}

void add_hooks(httplib::Server& svr, ServerContext& ctx) {
  svr.set_pre_routing_handler([&ctx](const httplib::Request& req, httplib::Response& res) {
    if (authorized(ctx, req)) return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, api_error_for_http_status(401));
    return httplib::Server::HandlerResponse::Handled;
  });
  // httplib's own errors (no route, body too large) get an OpenAI-shaped body too.
  svr.set_error_handler(httplib::Server::HandlerWithResponse(
      [](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        send_error(res, api_error_for_http_status(res.status));
        return httplib::Server::HandlerResponse::Handled;
      }));
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, api_error_from_status(Status::internal(what)));
  });
  svr.set_logger([&ctx](const httplib::Request& req, const httplib::Response& res) {
    ctx.metrics.on_request(endpoint_label(req.path), res.status);
  });
}

}  // namespace

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() { stop(); }

Expected<std::unique_ptr<HttpServer>> HttpServer::create(Engine& engine, const ServerOptions& options) {
  auto impl = std::make_unique<Impl>(engine);
  ServerContext& ctx = impl->ctx;
  ctx.options = options;
  ctx.limits.model_name = options.model_name.empty() ? "edge-infer" : options.model_name;
  ctx.limits.max_model_len = engine.options().max_model_len;
  if (const Tokenizer* tok = engine.tokenizer()) {
    auto chat = ChatPrompt::create(*tok, options.chat_template);
    if (!chat) return chat.status();
    ctx.chat.emplace(std::move(*chat));
  }
  httplib::Server& svr = impl->svr;
  const int threads = std::max(4, options.http_threads);
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  svr.set_payload_max_length(options.max_body_bytes);
  add_hooks(svr, ctx);
  add_routes(svr, ctx);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

Status HttpServer::bind() {
  const ServerOptions& o = impl_->ctx.options;
  if (o.port == 0) {
    impl_->port = impl_->svr.bind_to_any_port(o.host);
  } else if (impl_->svr.bind_to_port(o.host, o.port)) {
    impl_->port = o.port;
  }
  if (impl_->port <= 0)
    return Status::unavailable("cannot listen on " + o.host + ":" + std::to_string(o.port) +
                               " (address in use or not local)");
  return Status();
}

int HttpServer::port() const { return impl_->port; }

Status HttpServer::run() {
  if (impl_->port <= 0) RETURN_IF_ERROR(bind());
  if (!impl_->svr.listen_after_bind()) return Status::io_error("the HTTP server stopped with an error");
  return Status();
}

void HttpServer::stop() {
  if (impl_) impl_->svr.stop();
}

}  // namespace edge::server
