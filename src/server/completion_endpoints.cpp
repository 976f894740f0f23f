// /v1/chat/completions and /v1/completions: validate, build the prompt, start the
// generation, then answer in one JSON body or as a stream of server-sent events.
#include <chrono>
#include <memory>

#include "runtime/request_rules.h"
#include "server/connection_watch.h"
#include "server/generation.h"
#include "server/openai_response.h"
#include "server/server_context.h"
#include "server/sse.h"
#include "server/tool_grammar.h"

namespace edge::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct StreamState {
  Lifecycle::Ticket in_flight;  // a drain waits for it
  ClientLimiter::Lease lease;   // this request's share of its client's limits
  std::unique_ptr<Generation> gen;
  ResponseMeta meta;
  bool chat = false;
  bool include_usage = false;
  bool logprobs = false;
  bool return_tokens = false;  // completions: token ids beside the text (llama.cpp's extension)
  const Tokenizer* tok = nullptr;
  std::vector<size_t> tool_calls_sent;  // per choice: index of its next tool call
  std::vector<int64_t> text_offset;     // per choice (completion logprobs)
  bool started = false;
  Clock::time_point last_write = Clock::now();
};

// The chunks of one event; false if the client is gone.
template <typename Write>
bool write_event(StreamState& st, ChoiceEvent& ev, Write&& write) {
  const size_t i = static_cast<size_t>(ev.choice);
  if (st.chat) {
    json delta = json::object();
    if (!ev.delta.reasoning.empty()) delta["reasoning_content"] = ev.delta.reasoning;
    if (!ev.delta.content.empty()) delta["content"] = ev.delta.content;
    if (!ev.delta.calls.empty()) {
      delta["tool_calls"] =
          tool_calls_json(ev.delta.calls, st.tool_calls_sent[i], /*streaming=*/true);
      st.tool_calls_sent[i] += ev.delta.calls.size();
    }
    const bool have_lp = st.logprobs && !ev.logprobs.empty();
    const bool ids = st.return_tokens && !ev.tokens.empty();
    if (!delta.empty() || have_lp || ids) {
      json lp = have_lp ? chat_logprobs_json(ev.logprobs, st.tok) : json(nullptr);
      json chunk = chat_chunk_json(st.meta, ev.choice, std::move(delta), lp, "");
      if (ids) chunk["choices"][0]["tokens"] = ev.tokens;  // a pipeline's chat stage counts them
      if (!write(sse_data(chunk))) return false;
    }
    if (!ev.finish_reason.empty())
      return write(
          sse_data(chat_chunk_json(st.meta, ev.choice, json::object(), nullptr, ev.finish_reason)));
    return true;
  }
  json lp = nullptr;
  if (st.logprobs && !ev.logprobs.empty()) {
    lp = completion_logprobs_json(ev.logprobs, st.tok, st.text_offset[i]);
    for (const auto& t : lp["tokens"])
      st.text_offset[i] += static_cast<int64_t>(t.get<std::string>().size());
  }
  const bool ids = st.return_tokens && !ev.tokens.empty();
  if (ev.delta.content.empty() && lp.is_null() && ev.finish_reason.empty() && !ids) return true;
  json chunk = text_chunk_json(st.meta, ev.choice, ev.delta.content, lp, ev.finish_reason);
  if (st.return_tokens) chunk["choices"][0]["tokens"] = ev.tokens;
  return write(sse_data(chunk));
}

// One step of the chunked content provider: waits briefly for the next event and writes
// it. A failed write means the client went away: the generation is cancelled (its KV
// freed at once) and false ends the response.
bool stream_step(StreamState& st, httplib::DataSink& sink) {
  auto write = [&](const std::string& s) {
    if (!sink.write(s.data(), s.size())) return false;
    st.last_write = Clock::now();
    return true;
  };
  bool ok = true;
  if (!st.started) {
    st.started = true;
    if (st.chat)
      for (int i = 0; i < st.gen->n_choices() && ok; ++i)
        ok = write(sse_data(
            chat_chunk_json(st.meta, i, {{"role", "assistant"}, {"content", ""}}, nullptr, "")));
  }
  ChoiceEvent ev;
  switch (ok ? st.gen->poll(ev, std::chrono::milliseconds(100)) : Generation::Poll::kIdle) {
    case Generation::Poll::kIdle:
      // Silence also hides a vanished client; a comment line finds out.
      if (ok && Clock::now() - st.last_write > std::chrono::seconds(2))
        ok = write(sse_keep_alive());
      break;
    case Generation::Poll::kEvent:
      ok = write_event(st, ev, write);
      break;
    case Generation::Poll::kError:
      ok = write(sse_data(st.gen->error().to_json())) && write(sse_done());
      if (ok) sink.done();
      break;
    case Generation::Poll::kDone:
      if (st.include_usage)
        ok = write(sse_data(usage_chunk_json(
            st.meta, st.chat ? "chat.completion.chunk" : "text_completion", st.gen->usage())));
      ok = ok && write(sse_done());
      if (ok) sink.done();
      break;
  }
  if (!ok) st.gen->cancel();
  return ok;
}

void start_stream(httplib::Response& res, std::shared_ptr<StreamState> st) {
  const int n = st->gen->n_choices();
  st->tool_calls_sent.assign(static_cast<size_t>(n), 0);
  st->text_offset.assign(static_cast<size_t>(n), 0);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [st](size_t, httplib::DataSink& sink) { return stream_step(*st, sink); },
      [st](bool) {  // closes the session whatever happened
        st->gen.reset();
        st->lease.release();
        st->in_flight.release();
      });
}

// The client a request counts against: with an API key every authenticated caller shares
// the key; without one, the remote address.
std::string client_id(const ServerContext& ctx, const httplib::Request& req) {
  return ctx.options.api_key.empty() ? "addr:" + req.remote_addr : std::string("api-key");
}

// Admission (not draining, the client's limits), then the engine requests; the ticket and
// the lease travel with the state until the response has been written.
std::optional<ApiError> start_generation(ServerContext& ctx, const httplib::Request& req,
                                         const std::vector<int32_t>& prompt,
                                         const CommonRequest& common, const OutputSetup& setup,
                                         Clock::time_point arrived, StreamState& st,
                                         const std::vector<MediaEmbedding>& media = {},
                                         const std::string& chat = {}) {
  st.in_flight = ctx.lifecycle.enter();
  if (!st.in_flight) return not_ready_error(ctx.lifecycle.state());
  const int64_t tokens =
      (static_cast<int64_t>(prompt.size()) + common.params.max_tokens) * common.n;
  if (auto e = ctx.clients.admit(client_id(ctx, req), tokens, st.lease)) return e;
  if (auto e = Generation::start(ctx.engine(), prompt, common, setup, ctx.metrics, arrived, st.gen,
                                 media, chat))
    return e;
  st.gen->watch_drain(&ctx.lifecycle);
  return std::nullopt;
}

// The conversation passed on to a model behind another chat endpoint (a pipeline's
// chat.generate@1 stage): the client's messages as they came, image and audio parts
// unchanged. Tools are refused: that server would answer calls as structured deltas, which
// the stage's text stream does not carry.
std::optional<ApiError> forwarded_chat(const json& body, const ChatRequest& cr, std::string& out) {
  if (!cr.tools.empty())
    return ApiError::bad_request(
        "tools: this pipeline's text stage is another server's chat endpoint; tool calls are not "
        "passed through it",
        "tools", "unsupported_parameter");
  out = json{{"messages", body.at("messages")}}.dump();
  return std::nullopt;
}

// Compiles the request's response_format / grammar (cached) for its choices' guides.
std::optional<ApiError> attach_constraint(ServerContext& ctx, const httplib::Request& req,
                                          CommonRequest& common) {
  if (common.constraint.gbnf.empty()) return std::nullopt;
  if (auto e = schema_in_written_order(req.body, common.constraint)) return e;
  const Tokenizer* tok = ctx.engine().tokenizer();
  if (!tok)
    return ApiError::bad_request(
        "structured output needs the model's tokenizer; this model has none",
        common.constraint.param, "no_tokenizer");
  const bool harmony = common.constraint.harmony_tokens;
  auto g = ctx.grammars.get(common.constraint.gbnf, harmony);
  if (!g)
    return ApiError::bad_request(g.status().message(), common.constraint.param, "invalid_grammar");
  common.grammar = std::move(g->grammar);
  common.masks = std::move(g->masks);
  common.trie = ctx.grammars.trie(*tok, harmony);
  return std::nullopt;
}

// tool_choice "required" or a named function: the output is held to a call in the template's
// format (tool_grammar.h), the tools' schemas read in their written order. Not with a
// response_format. A harmony model's reply is started in the prompt (the call's header, as
// far as the choice allows) and `harmony_prefix` gets that text for the output's parser.
std::optional<ApiError> forced_tool_call(ServerContext& ctx, const httplib::Request& req,
                                         ChatPrompt::Rendered& prompt, ChatRequest& cr,
                                         std::string& harmony_prefix) {
  if (!cr.tool_required || !cr.common.constraint.gbnf.empty() || cr.tools.is_null())
    return std::nullopt;
  const auto body = nlohmann::ordered_json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object() || !body.contains("tools")) return std::nullopt;
  if (prompt.harmony) {
    auto call = harmony_call_gbnf(body["tools"], cr.forced_tool);
    if (!call) return ApiError::bad_request(call.status().message(), "tools", "unsupported_schema");
    const std::vector<int32_t> head =
        ctx.engine().tokenizer()->encode(call->prefix, /*add_special=*/false, /*parse_special=*/true);
    prompt.ids.insert(prompt.ids.end(), head.begin(), head.end());
    harmony_prefix = call->prefix;
    cr.common.constraint = {std::move(call->gbnf), "tools", false, true};
    return std::nullopt;
  }
  auto gbnf = tool_call_gbnf(body["tools"], cr.forced_tool, cr.parallel_tool_calls,
                             tool_format_of(ctx.chat->source()));
  if (!gbnf) return ApiError::bad_request(gbnf.status().message(), "tools", "unsupported_schema");
  cr.common.constraint = {std::move(*gbnf), "tools", false};
  return std::nullopt;
}

// Answers a started generation: as a stream, or (non-streaming) once every choice is done,
// with the body `build` makes from the results. A non-streaming client that hangs up
// meanwhile cancels the generation.
template <typename Build>
void respond(const httplib::Request& req, httplib::Response& res,
             const std::shared_ptr<StreamState>& st, bool stream, Build&& build) {
  if (stream) return start_stream(res, st);
  ConnectionWatch watch({req.local_addr, req.remote_addr, req.local_port, req.remote_port});
  std::vector<ChoiceResult> results;
  if (auto e = collect_all(*st->gen, results, [&watch] { return watch.client_gone(); }))
    return send_error(res, *e);
  send_json(res, 200, build(results));
}

}  // namespace

void handle_chat_completions(ServerContext& ctx, const httplib::Request& req,
                             httplib::Response& res) {
  const auto arrived = Clock::now();
  json body;
  if (auto e = parse_json_object(req.body, body)) return send_error(res, *e);
  ChatRequest cr;
  if (auto e = parse_chat_request(body, ctx.limits, cr)) return send_error(res, *e);
  if (!ctx.chat)
    return send_error(res, ApiError::bad_request(
                               "this model has no tokenizer: use /v1/completions with token ids",
                               "", "no_tokenizer"));
  ChatPrompt::Rendered prompt;
  if (auto e = ctx.chat->render(cr, prompt)) return send_error(res, *e);
  std::vector<MediaEmbedding> media;
  std::string forwarded;  // the conversation, for a model behind another chat endpoint
  if (ctx.engine().forwards_chat()) {
    if (auto e = forwarded_chat(body, cr, forwarded)) return send_error(res, *e);
  } else if (!cr.media.empty()) {
    if (auto e = build_media_prompt(ctx.media.get(), *ctx.engine().tokenizer(), prompt.text,
                                    cr.media, prompt.ids, media))
      return send_error(res, *e);
  }
  std::string harmony_prefix;  // a forced harmony call's header, already in the prompt
  if (auto e = forced_tool_call(ctx, req, prompt, cr, harmony_prefix)) return send_error(res, *e);
  if (auto e = fit_to_context(prompt.ids.size(), ctx.limits, "messages", cr.common))
    return send_error(res, *e);
  if (auto e = attach_constraint(ctx, req, cr.common)) return send_error(res, *e);
  // A constrained output has no reasoning section; it is all content, or (a forced tool
  // call) all calls.
  const bool open = !cr.common.grammar, calls = cr.common.constraint.param == "tools";
  const OutputSetup setup{open || calls, open && prompt.reasoning_open,
                          (open || calls) && cr.parse_tool_calls ? &cr.tools : nullptr,
                          (open || calls) && prompt.harmony, harmony_prefix};
  auto st = std::make_shared<StreamState>();
  if (auto e =
          start_generation(ctx, req, prompt.ids, cr.common, setup, arrived, *st, media, forwarded))
    return send_error(res, *e);
  st->meta = {random_id("chatcmpl-"), unix_seconds(), ctx.limits.reported_model_name()};
  st->tok = ctx.engine().tokenizer();
  st->chat = true;
  st->return_tokens = cr.return_tokens;
  st->include_usage = cr.common.include_usage;
  st->logprobs = cr.logprobs;
  respond(req, res, st, cr.common.stream, [&](const std::vector<ChoiceResult>& results) {
    return chat_completion_json(st->meta, results, st->gen->usage(), cr.logprobs, st->tok);
  });
}

void handle_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const auto arrived = Clock::now();
  json body;
  if (auto e = parse_json_object(req.body, body)) return send_error(res, *e);
  CompletionRequest cr;
  if (auto e = parse_completion_request(body, ctx.limits, cr)) return send_error(res, *e);
  const Tokenizer* tok = ctx.engine().tokenizer();
  std::vector<int32_t> ids;
  if (cr.prompt_is_ids) {
    if (Status st = check_prompt_ids(cr.prompt_ids, ctx.engine().config().n_vocab); !st.ok())
      return send_error(res, ApiError::bad_request(st.message(), "prompt", "invalid_token"));
    ids = cr.prompt_ids;
  } else {
    if (!tok)
      return send_error(
          res, ApiError::bad_request("this model has no tokenizer: send the prompt as token ids",
                                     "prompt", "no_tokenizer"));
    ids = tok->encode(cr.prompt_text, /*add_special=*/true);
  }
  if (auto e = fit_to_context(ids.size(), ctx.limits, "prompt", cr.common))
    return send_error(res, *e);
  if (auto e = attach_constraint(ctx, req, cr.common)) return send_error(res, *e);
  auto st = std::make_shared<StreamState>();
  if (auto e = start_generation(ctx, req, ids, cr.common, OutputSetup{}, arrived, *st))
    return send_error(res, *e);
  st->meta = {random_id("cmpl-"), unix_seconds(), ctx.limits.reported_model_name()};
  st->tok = tok;
  st->include_usage = cr.common.include_usage;
  st->logprobs = cr.common.params.logprobs >= 0;
  st->return_tokens = cr.return_tokens;
  respond(req, res, st, cr.common.stream, [&](const std::vector<ChoiceResult>& results) {
    json body = text_completion_json(st->meta, results, st->gen->usage(), st->logprobs, tok);
    if (st->return_tokens)
      for (size_t i = 0; i < results.size(); ++i) body["choices"][i]["tokens"] = results[i].tokens;
    return body;
  });
}

}  // namespace edge::server
