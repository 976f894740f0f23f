#include "server/http_server.h"

#include <fmt/format.h>

#include <atomic>
#include <functional>

#include "pipeline/graph/graph_engine.h"
#include "server/auth.h"
#include "server/connection_watch.h"
#include "server/server_context.h"
#include "server/web_assets.h"

namespace edge::server {

struct HttpServer::Impl {
  httplib::Server svr;
  ServerContext ctx;
  int port = -1;
  std::atomic<bool> stopped{false};  // svr.stop() done (it only acts on a running server)

  // Stops accepting once the server runs. httplib's stop() also ends every chunked
  // response at once (without its last chunk), so a drain calls it only when no generation
  // is left in flight.
  void stop_accepting() {
    if (svr.is_running() && !stopped.exchange(true)) svr.stop();
  }
  // From the accept loop's tick and from requests refused while draining.
  void finish_drain_if_done() {
    if (!ctx.lifecycle.drain_done(kDrainHardStop) || !svr.is_running() || stopped) return;
    stop_accepting();
    // Keep-alive connections would otherwise hold run() for their idle timeout (5 s).
    shutdown_reads_of_accepted(port);
  }
  // After the drain deadline, cancelled streams still write their last events; a client
  // that does not read them holds its stream for at most this long (write timeouts).
  static constexpr std::chrono::seconds kDrainHardStop{10};
};

namespace {

bool is_probe(const std::string& path) {
  return path == "/health" || path == "/health/live" || path == "/health/ready";
}

bool authorized(const ServerContext& ctx, const httplib::Request& req) {
  if (ctx.options.api_key.empty()) return true;
  return bearer_token_matches(req.get_header_value("Authorization"), ctx.options.api_key);
}

// The connection pool of httplib, plus a tick on the accept thread (every 100 ms when no
// connection arrives) that ends a drain once its generations are done.
class TickingPool final : public httplib::ThreadPool {
 public:
  TickingPool(size_t n, std::function<void()> tick) : ThreadPool(n), tick_(std::move(tick)) {}
  void on_idle() override { tick_(); }

 private:
  std::function<void()> tick_;
};

void add_routes(httplib::Server& svr, ServerContext& ctx) {
  using Req = httplib::Request;
  using Res = httplib::Response;
  svr.Post("/v1/chat/completions", [&ctx](const Req& q, Res& s) { handle_chat_completions(ctx, q, s); });
  svr.Post("/v1/completions", [&ctx](const Req& q, Res& s) { handle_completions(ctx, q, s); });
  svr.Post("/v1/embeddings", [&ctx](const Req& q, Res& s) { handle_embeddings(ctx, q, s); });
  svr.Post("/v1/rerank", [&ctx](const Req& q, Res& s) { handle_rerank(ctx, q, s); });
  svr.Post("/rerank", [&ctx](const Req& q, Res& s) { handle_rerank(ctx, q, s); });
  svr.Post("/v1/audio/speech", [&ctx](const Req& q, Res& s) { handle_speech(ctx, q, s); });
  svr.Get("/v1/audio/voices", [&ctx](const Req& q, Res& s) { handle_voices(ctx, q, s); });
  svr.Get("/v1/models", [&ctx](const Req& q, Res& s) { handle_models(ctx, q, s); });
  svr.Post("/tokenize", [&ctx](const Req& q, Res& s) { handle_tokenize(ctx, q, s); });
  svr.Post("/detokenize", [&ctx](const Req& q, Res& s) { handle_detokenize(ctx, q, s); });
  svr.Get("/metrics", [&ctx](const Req& q, Res& s) { handle_metrics(ctx, q, s); });
  svr.Get("/v1/pipeline", [&ctx](const Req& q, Res& s) { handle_pipeline(ctx, q, s); });
  svr.Get("/health/live", [&ctx](const Req& q, Res& s) { handle_liveness(ctx, q, s); });
  svr.Get("/health/ready", [&ctx](const Req& q, Res& s) { handle_readiness(ctx, q, s); });
  svr.Get("/health", [&ctx](const Req& q, Res& s) { handle_readiness(ctx, q, s); });
  add_web_routes(svr);  // the chat page at / and its /assets/
}

// Before routing: the API key, then the lifecycle (503 while loading or draining). The
// probes pass through: they report the lifecycle themselves.
httplib::Server::HandlerResponse admit(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  using HR = httplib::Server::HandlerResponse;
  // The chat page loads without the key (it asks for it) and while the model loads.
  if (is_probe(req.path) || find_web_asset(req.path)) return HR::Unhandled;
  if (!authorized(ctx, req)) {
    send_error(res, api_error_for_http_status(401));
    return HR::Handled;
  }
  const Lifecycle::State state = ctx.lifecycle.state();
  if (state == Lifecycle::State::kReady) return HR::Unhandled;
  if (state == Lifecycle::State::kDraining) res.set_header("Connection", "close");
  send_error(res, not_ready_error(state));
  return HR::Handled;
}

// `drain_tick` runs after each request refused while draining.
void add_hooks(httplib::Server& svr, ServerContext& ctx, std::function<void()> drain_tick) {
  svr.set_pre_routing_handler([&ctx, drain_tick](const httplib::Request& req, httplib::Response& res) {
    const auto handled = admit(ctx, req, res);
    if (ctx.lifecycle.state() == Lifecycle::State::kDraining) drain_tick();
    return handled;
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

Expected<std::unique_ptr<HttpServer>> HttpServer::create(const ServerOptions& options) {
  auto impl = std::make_unique<Impl>();
  ServerContext& ctx = impl->ctx;
  ctx.options = options;
  ctx.limits.model_names = options.model_names.empty() ? std::vector<std::string>{"edge-infer"} : options.model_names;
  ctx.clients.set_limits(options.client_limits);
  httplib::Server& svr = impl->svr;
  const int threads = std::max(4, options.http_threads);
  Impl* raw = impl.get();
  svr.new_task_queue = [threads, raw] {
    return new TickingPool(static_cast<size_t>(threads), [raw] { raw->finish_drain_if_done(); });
  };
  svr.set_idle_interval(0, 100000);
  svr.set_payload_max_length(options.max_body_bytes);
  add_hooks(svr, ctx, [raw] { raw->finish_drain_if_done(); });
  add_routes(svr, ctx);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

Expected<std::unique_ptr<HttpServer>> HttpServer::create(Engine& engine, const ServerOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<HttpServer> s, create(options));
  RETURN_IF_ERROR(s->attach(engine));
  return s;
}

Status HttpServer::attach(Engine& engine) {
  ServerContext& ctx = impl_->ctx;
  if (ctx.engine_ptr) return Status::invalid_argument("the server already has an engine");
  ctx.limits.max_model_len = engine.options().max_model_len;
  if (ctx.media && ctx.media->vision_hparams && ctx.media->vision_hparams->n_out != engine.config().n_embd)
    return Status::invalid_argument(fmt::format(
        "--mmproj: the projector's output width (clip.vision.projection_dim) is {}, the model's embedding width {}: "
        "the projector belongs to another model",
        ctx.media->vision_hparams->n_out, engine.config().n_embd));
  if (ctx.media && ctx.media->audio_hparams && ctx.media->audio_hparams->n_out != engine.config().n_embd)
    return Status::invalid_argument(fmt::format(
        "--mmproj: the audio projector's output width (clip.audio.projection_dim) is {}, the model's embedding "
        "width {}: the projector belongs to another model",
        ctx.media->audio_hparams->n_out, engine.config().n_embd));
  if (const Tokenizer* tok = engine.tokenizer()) {
    auto chat = ChatPrompt::create(*tok, ctx.options.chat_template);
    if (!chat) return chat.status();
    ctx.chat.emplace(std::move(*chat));
  }
  ctx.engine_ptr = &engine;
  ctx.lifecycle.set_ready();  // publishes the fields above to the handler threads
  return Status();
}

Status HttpServer::attach(pipeline::PipelineRuntime& graph) {
  ServerContext& ctx = impl_->ctx;
  Engine* engine = graph.text_engine();
  if (!engine) {  // the text stage runs in another process: the same calls, through the graph
    auto adapter = pipeline::make_graph_engine(graph);
    if (!adapter)
      return adapter.status().with_context(
          fmt::format("pipeline '{}' cannot answer the OpenAI endpoints", graph.spec().name));
    ctx.graph_engine = std::move(*adapter);
    engine = ctx.graph_engine.get();
  }
  ctx.pipeline = &graph;  // published with the engine by attach()'s set_ready
  return attach(*engine);
}

Status HttpServer::attach_speech(pipeline::PipelineRuntime& speech, SpeechVoices voices) {
  ServerContext& ctx = impl_->ctx;
  if (ctx.lifecycle.state() != Lifecycle::State::kLoading)
    return Status::invalid_argument("attach_speech() comes before attach()");
  ctx.speech = &speech;  // published by attach()'s set_ready
  ctx.speech_voices = std::move(voices);
  return Status();
}

Status HttpServer::attach_media(std::shared_ptr<MediaEncoders> encoders) {
  ServerContext& ctx = impl_->ctx;
  if (ctx.lifecycle.state() != Lifecycle::State::kLoading)
    return Status::invalid_argument("attach_media() comes before attach()");
  ctx.media = std::move(encoders);  // published by attach()'s set_ready
  return Status();
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
  if (!impl_->svr.listen_after_bind() && !impl_->stopped)
    return Status::io_error("the HTTP server stopped with an error");
  return Status();
}

void HttpServer::stop() {
  if (impl_) impl_->stop_accepting();
}

void HttpServer::drain(std::chrono::milliseconds grace) {
  impl_->ctx.lifecycle.begin_drain(grace);
  impl_->finish_drain_if_done();
}

}  // namespace edge::server
