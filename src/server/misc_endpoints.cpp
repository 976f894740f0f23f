// /v1/models, /tokenize, /detokenize, /metrics, the health probes, and the JSON / error
// senders.
#include "server/openai_response.h"
#include "server/request_fields.h"
#include "server/server_context.h"

namespace edge::server {

using nlohmann::json;

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump_json(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  if (e.retry_after_s > 0) res.set_header("Retry-After", std::to_string(e.retry_after_s));
  send_json(res, e.http_status, e.to_json());
}

void handle_models(ServerContext& ctx, const httplib::Request&, httplib::Response& res) {
  // What the model takes besides text (the chat page shows its attach controls from this).
  json capabilities = json::array();
  if (ctx.media && ctx.media->vision_hparams) capabilities.push_back("vision");
  if (ctx.media && ctx.media->audio_hparams) capabilities.push_back("audio");
  json data = json::array();
  for (const std::string& name : ctx.limits.model_names)
    data.push_back({{"id", name},
                    {"object", "model"},
                    {"created", unix_seconds()},
                    {"owned_by", "edge-infer"},
                    {"root", ctx.limits.reported_model_name()},
                    {"max_model_len", ctx.limits.max_model_len},
                    {"capabilities", capabilities}});
  send_json(res, 200, {{"object", "list"}, {"data", data}});
}

void handle_liveness(ServerContext&, const httplib::Request&, httplib::Response& res) {
  send_json(res, 200, {{"status", "ok"}});
}

ApiError not_ready_error(Lifecycle::State state) {
  ApiError e;
  e.http_status = 503;
  e.type = "server_error";
  const bool loading = state == Lifecycle::State::kLoading;
  e.message = loading ? "the model is still loading" : "the server is shutting down";
  e.code = loading ? "model_loading" : "shutting_down";
  e.retry_after_s = loading ? 1 : 0;
  return e;
}

// Ready: 200. Loading or draining: 503 (load balancers take the server out of rotation).
void handle_readiness(ServerContext& ctx, const httplib::Request&, httplib::Response& res) {
  const Lifecycle::State state = ctx.lifecycle.state();
  if (state == Lifecycle::State::kReady) return send_json(res, 200, {{"status", "ok"}});
  json body = not_ready_error(state).to_json();
  body["status"] = state == Lifecycle::State::kLoading ? "loading" : "draining";
  send_json(res, 503, body);
}

// {"content" | "prompt": text, "add_special": true, "with_pieces": false}
//   -> {"tokens": [ids] or [{id, piece}], "count", "max_model_len"}
void handle_tokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json body;
  if (auto e = parse_json_object(req.body, body)) return send_error(res, *e);
  RequestFields f(body);
  std::optional<std::string> content, prompt;
  bool add_special = true, with_pieces = false;
  f.string("content", content);
  f.string("prompt", prompt);
  f.boolean("add_special", add_special);
  f.boolean("with_pieces", with_pieces);
  if (f.error()) return send_error(res, *f.error());
  if (!content && !prompt) return send_error(res, ApiError::bad_request("'content' is required", "content", "missing"));
  const Tokenizer* tok = ctx.engine().tokenizer();
  if (!tok) return send_error(res, ApiError::bad_request("this model has no tokenizer", "", "no_tokenizer"));
  const auto ids = tok->encode(content ? *content : *prompt, add_special);
  json tokens = json::array();
  for (int32_t id : ids) {
    if (with_pieces) tokens.push_back({{"id", id}, {"piece", tok->decode({id}, /*special=*/true)}});
    else tokens.push_back(id);
  }
  send_json(res, 200, {{"tokens", tokens}, {"count", ids.size()}, {"max_model_len", ctx.limits.max_model_len}});
}

// {"tokens": [ids]} -> {"content": text}
void handle_detokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json body;
  if (auto e = parse_json_object(req.body, body)) return send_error(res, *e);
  RequestFields f(body);
  const json& tokens = f.array("tokens");
  if (f.error()) return send_error(res, *f.error());
  if (!tokens.is_array()) return send_error(res, ApiError::bad_request("'tokens' is required", "tokens", "missing"));
  const Tokenizer* tok = ctx.engine().tokenizer();
  if (!tok) return send_error(res, ApiError::bad_request("this model has no tokenizer", "", "no_tokenizer"));
  std::vector<int32_t> ids;
  for (const auto& t : tokens) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= tok->n_vocab())
      return send_error(res, ApiError::bad_request("'tokens' must be ids in [0, " + std::to_string(tok->n_vocab()) +
                                                       "), got " + t.dump(),
                                                   "tokens", "invalid_token"));
    ids.push_back(t.get<int32_t>());
  }
  send_json(res, 200, {{"content", tok->decode(ids)}});
}

void handle_metrics(ServerContext& ctx, const httplib::Request&, httplib::Response& res) {
  std::string text = ctx.metrics.render(ctx.engine().stats());
  if (ctx.pipeline) {
    (void)ctx.pipeline->check_reservations();  // measured now; an excess shows in the gauges
    text += ctx.pipeline->metrics_text();
  }
  if (ctx.speech) text += ctx.speech_figures.metrics_text();
  res.status = 200;
  res.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
}

void handle_pipeline(ServerContext& ctx, const httplib::Request&, httplib::Response& res) {
  if (!ctx.pipeline) {
    ApiError e;
    e.http_status = 404, e.type = "not_found_error";
    e.message = "this server serves an engine, not a pipeline";
    send_error(res, e);
    return;
  }
  (void)ctx.pipeline->check_reservations();
  send_json(res, 200, ctx.pipeline->state_json());
}

}  // namespace edge::server
