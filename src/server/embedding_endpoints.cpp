// POST /v1/embeddings (OpenAI's shape) and POST /v1/rerank (llama.cpp's and common RAG
// clients'). Both run their inputs as embedding requests of the engine
// (GenerateRequest::pooling), one session, batched by the scheduler like any prompt.
//
// Embeddings: the pooled final-normed hidden state, L2-normalised; `dimensions` keeps the
// first N values and normalises again; encoding_format "base64" is the float32 values'
// little-endian bytes. Rerank with a decoder (Qwen3-Reranker's recipe): each document
// becomes the judge prompt below and its relevance is P(yes) from the head's "yes" and
// "no" logits at the last position, sigmoid(yes - no). A text encoder (BERT family) is
// served by the encoder engine: embeddings pooled as its file says, and with a
// classification head the cross-encoder's raw score per (query, document) pair.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/base64.h"
#include "server/request_fields.h"
#include "server/server_context.h"

namespace edge::server {

namespace {

using nlohmann::json;

constexpr size_t kMaxInputs = 2048;     // inputs of one /v1/embeddings request
constexpr size_t kMaxDocuments = 1000;  // documents of one /v1/rerank request

// The inputs as token ids: a string, a list of strings, a list of ids, a list of lists.
std::optional<ApiError> read_inputs(const json& in, const Tokenizer* tok, int32_t n_vocab,
                                    std::vector<std::vector<int32_t>>& out) {
  auto bad = [](const std::string& m) {
    return ApiError::bad_request(m, "input", "invalid_value");
  };
  auto ids = [&](const json& arr, std::vector<int32_t>& v) -> std::optional<ApiError> {
    for (const json& t : arr) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab)
        return bad(fmt::format("'input' token ids must be integers in [0, {}), got {}", n_vocab,
                               t.dump()));
      v.push_back(t.get<int32_t>());
    }
    return std::nullopt;
  };
  auto text = [&](const json& s, std::vector<int32_t>& v) -> std::optional<ApiError> {
    if (!tok) return bad("this model has no tokenizer: send token ids");
    v = tok->encode(s.get<std::string>(), /*add_special=*/true);
    return std::nullopt;
  };
  std::vector<json> items;
  if (in.is_string()) {
    items.push_back(in);
  } else if (in.is_array() && !in.empty() && in[0].is_number()) {
    items.push_back(in);  // one list of ids
  } else if (in.is_array()) {
    items.assign(in.begin(), in.end());
  } else {
    return bad(
        "'input' must be a string, a list of strings, a list of token ids or a list of lists of "
        "ids");
  }
  if (items.empty()) return bad("'input' is an empty list");
  if (items.size() > kMaxInputs)
    return bad(fmt::format("'input' has {} items, at most {}", items.size(), kMaxInputs));
  for (const json& item : items) {
    std::vector<int32_t> v;
    if (item.is_string()) {
      if (item.get_ref<const std::string&>().empty()) return bad("'input' holds an empty string");
      if (auto e = text(item, v)) return e;
    } else if (item.is_array()) {
      if (auto e = ids(item, v)) return e;
    } else {
      return bad("each 'input' item must be a string or a list of token ids");
    }
    if (v.empty()) return bad("an 'input' item has no tokens");
    out.push_back(std::move(v));
  }
  return std::nullopt;
}

Expected<Pooling> served_pooling(const ServerContext& ctx) {
  const std::string& o = ctx.options.pooling;
  if (o == "mean") return Pooling::kMean;
  if (o == "cls") return Pooling::kCls;
  if (o == "last") return Pooling::kLast;
  if (!o.empty()) return Status::invalid_argument("pooling '" + o + "' is not mean, cls or last");
  switch (ctx.engine().config().pooling_type) {
    case 2:
    case 4:  // a cross-encoder's embeddings: its first position, the head's input
      return Pooling::kCls;
    case 3:
      return Pooling::kLast;
    default:
      return Pooling::kMean;
  }
}

// Runs every prompt as an embedding request in one session; the final chunks in order.
std::optional<ApiError> run_pooled(ServerContext& ctx, std::vector<std::vector<int32_t>> prompts,
                                   Pooling pooling, const std::vector<int32_t>& score_ids,
                                   std::vector<StreamChunk>& out) {
  Engine& engine = ctx.engine();
  auto session = engine.open_session();
  if (!session) return api_error_from_status(session.status());
  struct Closer {
    Engine& e;
    SessionId s;
    ~Closer() { (void)e.close_session(s); }
  } closer{engine, *session};
  std::vector<RequestHandle> handles;
  for (auto& p : prompts) {
    GenerateRequest r;
    r.prompt = std::move(p);
    r.params.max_tokens = 1;
    r.pooling = pooling;
    r.score_ids = score_ids;
    auto h = engine.submit(*session, std::move(r));
    if (!h) return api_error_from_status(h.status());
    handles.push_back(*h);
  }
  for (const RequestHandle& h : handles) {
    for (;;) {
      auto c = engine.next(h, std::chrono::minutes(10));
      if (!c) return api_error_from_status(c.status());
      if (c->kind == ChunkKind::kTokens) continue;
      if (c->kind != ChunkKind::kDone)
        return api_error_from_status(c->error.ok() ? Status::cancelled("cancelled") : c->error);
      out.push_back(std::move(*c));
      break;
    }
  }
  return std::nullopt;
}

void normalise(std::vector<float>& v) {
  double ss = 0;
  for (float x : v) ss += static_cast<double>(x) * x;
  const double n = std::sqrt(ss);
  if (n > 0)
    for (float& x : v) x = static_cast<float>(x / n);
}

json encoded(const std::vector<float>& v, bool base64_format) {
  if (!base64_format) return v;
  std::string bytes(v.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());  // little-endian on every target we build
  return base64(bytes);
}

}  // namespace

void handle_embeddings(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json body;
  if (auto e = parse_json_object(req.body, body)) return send_error(res, *e);
  RequestFields f(body);
  std::optional<std::string> model, format;
  std::optional<int64_t> dimensions;
  f.string("model", model);
  f.string("encoding_format", format);
  const int32_t n_embd = ctx.engine().config().n_embd;
  f.integer("dimensions", 1, INT32_MAX, dimensions);
  if (f.error()) return send_error(res, *f.error());
  if (model && !ctx.limits.serves(*model))
    return send_error(res, ApiError::bad_request("the model '" + *model + "' does not exist",
                                                 "model", "model_not_found"));
  if (format && *format != "float" && *format != "base64")
    return send_error(res, ApiError::bad_request("'encoding_format' must be float or base64",
                                                 "encoding_format", "invalid_value"));
  if (dimensions && *dimensions > n_embd)
    return send_error(
        res, ApiError::bad_request(fmt::format("'dimensions' is {}, the model's embeddings have {}",
                                               *dimensions, n_embd),
                                   "dimensions", "invalid_value"));
  if (!body.contains("input"))
    return send_error(res, ApiError::bad_request("'input' is required", "input", "missing"));
  std::vector<std::vector<int32_t>> prompts;
  if (auto e = read_inputs(body["input"], ctx.engine().tokenizer(), ctx.engine().config().n_vocab,
                           prompts))
    return send_error(res, *e);
  auto pooling = served_pooling(ctx);
  if (!pooling) return send_error(res, api_error_from_status(pooling.status()));
  auto in_flight = ctx.lifecycle.enter();
  if (!in_flight) return send_error(res, not_ready_error(ctx.lifecycle.state()));
  std::vector<StreamChunk> chunks;
  if (auto e = run_pooled(ctx, std::move(prompts), *pooling, {}, chunks))
    return send_error(res, *e);
  json data = json::array();
  int64_t tokens = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    std::vector<float>& v = chunks[i].embedding;
    normalise(v);
    if (dimensions) {
      v.resize(static_cast<size_t>(*dimensions));
      normalise(v);
    }
    tokens += chunks[i].prompt_tokens;
    data.push_back({{"object", "embedding"},
                    {"index", i},
                    {"embedding", encoded(v, format && *format == "base64")}});
  }
  send_json(res, 200,
            {{"object", "list"},
             {"data", data},
             {"model", ctx.limits.reported_model_name()},
             {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
}

namespace {

// Qwen3-Reranker's judge prompt (its model card's format).
std::string judge_prompt(const std::string& instruction, const std::string& query,
                         const std::string& doc) {
  return "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query "
         "and the "
         "Instruct provided. Note that the answer can only be \"yes\" or "
         "\"no\".<|im_end|>\n<|im_start|>user\n"
         "<Instruct>: " +
         instruction + "\n<Query>: " + query + "\n<Document>: " + doc +
         "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
}

std::optional<ApiError> read_documents(const json& body, std::vector<std::string>& docs) {
  auto it = body.find("documents");
  if (it == body.end()) it = body.find("texts");  // TEI's name for them
  if (it == body.end() || !it->is_array())
    return ApiError::bad_request("'documents' is required: a list of strings", "documents",
                                 "missing");
  if (it->empty())
    return ApiError::bad_request("'documents' is an empty list", "documents", "invalid_value");
  if (it->size() > kMaxDocuments)
    return ApiError::bad_request(
        fmt::format("'documents' has {} items, at most {}", it->size(), kMaxDocuments), "documents",
        "invalid_value");
  for (const json& d : *it) {
    if (d.is_string()) {
      docs.push_back(d.get<std::string>());
    } else if (d.is_object() && d.contains("text") && d["text"].is_string()) {
      docs.push_back(d["text"].get<std::string>());
    } else {
      return ApiError::bad_request("each of 'documents' must be a string or {\"text\": string}",
                                   "documents", "invalid_type");
    }
  }
  return std::nullopt;
}

struct Scored {
  size_t index;
  double score;
};

// The results best first, cut to top_n.
void send_ranked(ServerContext& ctx, std::vector<Scored> scored, const std::vector<std::string>& docs,
                 std::optional<int64_t> top_n, bool return_documents, int64_t tokens,
                 httplib::Response& res) {
  std::stable_sort(scored.begin(), scored.end(),
                   [](const Scored& a, const Scored& b) { return a.score > b.score; });
  if (top_n && static_cast<size_t>(*top_n) < scored.size())
    scored.resize(static_cast<size_t>(*top_n));
  json results = json::array();
  for (const Scored& s : scored) {
    json r = {{"index", s.index}, {"relevance_score", s.score}};
    if (return_documents) r["document"] = {{"text", docs[s.index]}};
    results.push_back(std::move(r));
  }
  send_json(res, 200,
            {{"object", "list"},
             {"model", ctx.limits.reported_model_name()},
             {"results", results},
             {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
}

// A cross-encoder (BGE-reranker style, a text encoder with a classification head): each
// pair is [BOS] query [EOS] [SEP] document [EOS], as llama.cpp's server lays it out (BERT
// vocabularies: [CLS] q [SEP] [SEP] d [SEP]), and its relevance is the head's raw score.
void rerank_cross_encoder(ServerContext& ctx, const std::string& query,
                          const std::vector<std::string>& docs, std::optional<int64_t> top_n,
                          bool return_documents, httplib::Response& res) {
  const Tokenizer& tok = *ctx.engine().tokenizer();
  const Vocab& v = tok.vocab();
  const int32_t bos = v.bos_id >= 0 ? v.bos_id : v.cls_id, eos = v.eos_id >= 0 ? v.eos_id : v.sep_id;
  const int32_t sep = v.sep_id >= 0 ? v.sep_id : eos;
  if (bos < 0 || eos < 0)
    return send_error(res, ApiError::bad_request(
                               "this model's vocabulary has no [CLS]/[SEP] (BOS/EOS) to pair texts",
                               "", "no_tokenizer"));
  const std::vector<int32_t> q = tok.encode(query, false);
  std::vector<std::vector<int32_t>> prompts;
  for (const std::string& d : docs) {
    std::vector<int32_t> p{bos};
    p.insert(p.end(), q.begin(), q.end());
    p.push_back(eos);
    p.push_back(sep);
    const std::vector<int32_t> dt = tok.encode(d, false);
    p.insert(p.end(), dt.begin(), dt.end());
    p.push_back(eos);
    prompts.push_back(std::move(p));
  }
  auto in_flight = ctx.lifecycle.enter();
  if (!in_flight) return send_error(res, not_ready_error(ctx.lifecycle.state()));
  std::vector<StreamChunk> chunks;
  if (auto e = run_pooled(ctx, std::move(prompts), Pooling::kRank, {}, chunks))
    return send_error(res, *e);
  std::vector<Scored> scored;
  int64_t tokens = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    scored.push_back({i, static_cast<double>(chunks[i].scores.at(0))});
    tokens += chunks[i].prompt_tokens;
  }
  send_ranked(ctx, std::move(scored), docs, top_n, return_documents, tokens, res);
}

}  // namespace

void handle_rerank(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json body;
  if (auto e = parse_json_object(req.body, body)) return send_error(res, *e);
  RequestFields f(body);
  std::optional<std::string> model, query, instruction;
  std::optional<int64_t> top_n;
  bool return_documents = false;
  f.string("model", model);
  f.string("query", query);
  f.string("instruction", instruction);
  f.integer("top_n", 1, INT32_MAX, top_n);
  f.boolean("return_documents", return_documents);
  if (f.error()) return send_error(res, *f.error());
  if (model && !ctx.limits.serves(*model))
    return send_error(res, ApiError::bad_request("the model '" + *model + "' does not exist",
                                                 "model", "model_not_found"));
  if (!query)
    return send_error(res, ApiError::bad_request("'query' is required", "query", "missing"));
  std::vector<std::string> docs;
  if (auto e = read_documents(body, docs)) return send_error(res, *e);
  const Tokenizer* tok = ctx.engine().tokenizer();
  if (!tok)
    return send_error(res,
                      ApiError::bad_request("this model has no tokenizer", "", "no_tokenizer"));
  if (ctx.engine().config().encoder_only)
    return rerank_cross_encoder(ctx, *query, docs, top_n, return_documents, res);
  const std::vector<int32_t> yes = tok->encode("yes", false), no = tok->encode("no", false);
  if (yes.empty() || no.empty())
    return send_error(
        res, ApiError::bad_request("the vocabulary cannot spell yes/no", "", "no_tokenizer"));
  const std::string task = instruction.value_or(
      "Given a web search query, retrieve relevant passages that answer the query");
  std::vector<std::vector<int32_t>> prompts;
  for (const std::string& d : docs)
    prompts.push_back(tok->encode(judge_prompt(task, *query, d), true));
  auto in_flight = ctx.lifecycle.enter();
  if (!in_flight) return send_error(res, not_ready_error(ctx.lifecycle.state()));
  std::vector<StreamChunk> chunks;
  if (auto e = run_pooled(ctx, std::move(prompts), Pooling::kLast, {yes[0], no[0]}, chunks))
    return send_error(res, *e);
  std::vector<Scored> scored;
  int64_t tokens = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const auto& s = chunks[i].scores;
    scored.push_back({i, 1.0 / (1.0 + std::exp(static_cast<double>(s[1]) - s[0]))});
    tokens += chunks[i].prompt_tokens;
  }
  send_ranked(ctx, std::move(scored), docs, top_n, return_documents, tokens, res);
}

}  // namespace edge::server
