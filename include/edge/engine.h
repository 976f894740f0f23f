// The engine API: one loaded model served to many concurrent requests.
//
// A caller opens a session, submits requests into it and reads each request's chunks from
// a bounded stream. The engine runs one background loop: a token-budget scheduler picks,
// every step, which requests advance by how many tokens (continuous batching, chunked
// prefill), the model runs them in one forward pass over a paged KV cache, and sampled
// tokens are pushed to the requests' streams.
//
// Streams are bounded (`stream_queue_limit` chunks): a request whose consumer does not
// read is paused (it keeps its KV but is not scheduled) until the consumer catches up, so
// a slow consumer never loses its own tokens and never stalls other requests.
// cancel() frees the request's KV at once; its stream ends with a kCancelled chunk.
// A handle from another engine, a closed session or a finished-and-drained request is
// rejected with an error (never undefined behaviour).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/config.h"
#include "runtime/sampler.h"
#include "tokenizer/tokenizer.h"

namespace edge {

class Model;

struct EngineOptions {
  std::string model_path;            // empty: the caller passes a loaded model to create()
  int n_threads = 0;                 // 0: default
  int64_t max_model_len = 4096;      // context per sequence (prompt + generated)
  int32_t max_seqs = 8;              // sequences scheduled together
  int64_t max_batched_tokens = 512;  // tokens per forward step (chunked prefill)
  uint64_t kv_budget_bytes = 0;      // 0: enough for max_seqs full contexts
  std::string kv_type = "f16";       // K cache (and V, unless kv_type_v): f32|f16|bf16|q8|q4
  std::string kv_type_v;             // V cache; "" = as kv_type
  bool prefix_cache = true;
  // Models with recurrent layers (Qwen3.5): state checkpoints kept for the prefix cache, each
  // one sequence's state bytes (runtime/kv_cache.h); 0 turns their prefix cache off.
  int32_t state_checkpoints = 4;
  int32_t stream_queue_limit = 64;  // chunks buffered per request before it is paused
  // Inter-token latency the running streams should keep while new prompts are computed:
  // a step that carries prompt tokens next to decoding sequences is capped at what the
  // measured step costs say fits in it. 0: twice a decode-only step (measured); < 0: no
  // cap (prompt chunks up to max_batched_tokens whatever runs beside them).
  double itl_target_ms = 0;
  std::string activations = "auto";  // LoadOptions::activations
  uint64_t memory_limit_bytes = 0;   // 0: MemAvailable / cgroup limit only (memory plan)
  // Speculative decoding: "ngram" drafts each decoding sequence's next tokens by prompt
  // lookup and verifies them in its next step (greedy: the same tokens; sampling: the same
  // distribution); each sequence's draft length follows its measured acceptance and the
  // measured step costs, and is 0 where drafting does not pay. "" decodes plainly. Requests
  // with a guide or logprobs decode plainly; models with recurrent layers keep 1 + draft_max
  // state copies per sequence (the memory plan counts them) to go back after a rejection.
  // "draft": a small model sharing the tokenizer (draft_model) drafts greedily for each
  // decoding sequence, its cost per drafted token weighed beside the verify step's; it runs
  // on the engine's threads and keeps a KV cache per decoding sequence (the memory plan
  // counts its weights, caches and scratch).
  std::string speculative;
  int32_t draft_max = 4;    // longest draft per sequence and step
  std::string draft_model;  // speculative "draft": the draft model's file or directory
  // Fault injection for tests of the failure paths: called before each forward step; a
  // non-OK status fails that step as a failing forward pass would. Unset in production.
  std::function<Status()> step_fault;
  // Tests of speculation: drafts (up to max_tokens to follow history, the prompt and the
  // tokens so far) in place of the n-gram lookup, when `speculative` is set. Unset in production.
  std::function<std::vector<int32_t>(const std::vector<int32_t>& history, int32_t max_tokens)>
      draft_source;
};

// Sampling plus stopping rules for one request.
struct RequestParams {
  SamplingParams sampling = SamplingParams::greedy();
  int32_t max_tokens = 256;       // generated tokens at most
  std::vector<std::string> stop;  // stop strings (not included in the output)
  std::vector<int32_t> stop_ids;  // extra stop token ids (EOS/EOG always stop unless ignore_eos)
  bool ignore_eos = false;
  int32_t logprobs = -1;  // -1: none; 0..20: chosen token + that many alternatives
  // Constrained decoding (runtime/sampler.h): only the tokens it allows are sampled. One
  // guide per request (it may keep state); in this process only (it does not travel to a
  // worker or an external server).
  std::shared_ptr<TokenGuide> guide;
};

// Media (an image, an audio clip) already encoded into the LM's input space, spliced into
// the prompt: rows [n_tokens, n_embd] replace the token embeddings of positions
// [position, position + n_tokens). The prompt holds placeholder ids there (the family's
// image/audio soft token; any valid id). `hash` identifies the content (the media bytes
// and the projector): the prefix cache keys those positions on it, so a repeated image
// reuses the cached KV and is neither re-encoded nor recomputed.
struct MediaEmbedding {
  int64_t position = 0;
  int64_t n_tokens = 0;
  std::shared_ptr<const std::vector<float>> rows;  // [n_tokens * n_embd]
  uint64_t hash = 0;
  // The rows attend to each other (Gemma-3 images); otherwise causal like text.
  bool bidirectional = false;
};

// How an embedding request turns the final hidden states of its prompt into one vector
// (llama.cpp's pooling types): their mean, the first position's (BERT's CLS), or the last
// position's (decoder embedding models such as Qwen3-Embedding, whose prompt ends in EOS).
// kRank: a cross-encoder's relevance score, its first position through the classification
// head (text encoders with one only: runtime/encoder_engine.h); the chunk's scores[0].
enum class Pooling : uint8_t { kNone, kMean, kCls, kLast, kRank };

struct GenerateRequest {
  std::vector<int32_t> prompt;  // token ids (already templated / tokenised)
  RequestParams params;
  std::vector<MediaEmbedding> media;  // disjoint spans inside the prompt
  // Only for an engine that forwards_chat(): the client's conversation as it came,
  // {"messages": [...]} with its image and audio parts; `prompt` is then the local
  // rendering, for the context check and the usage count.
  std::string chat;
  // An embedding request (pooling != kNone): nothing is generated; its prompt runs (never
  // from the prefix cache for kMean / kCls, which need every position) and the request ends
  // with one kDone chunk (finish_reason "embedding") carrying the pooled final-normed hidden
  // state, not normalised. score_ids (kLast only): that chunk also carries the output head's
  // logits of these ids at the last position (a Qwen3-Reranker's "yes" and "no").
  Pooling pooling = Pooling::kNone;
  std::vector<int32_t> score_ids;
};

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0.f;
  std::vector<std::pair<int32_t, float>> top;  // [logprobs] alternatives, best first
};

enum class ChunkKind { kTokens, kDone, kCancelled, kError };

struct StreamChunk {
  ChunkKind kind = ChunkKind::kTokens;
  std::vector<int32_t> tokens;         // new tokens (kTokens)
  std::string text;                    // their UTF-8 text (complete characters only)
  std::vector<TokenLogprob> logprobs;  // one per token when requested
  std::string finish_reason;           // kDone: "stop" | "length"
  Status error;                        // kError
  std::vector<float> embedding;        // an embedding request's kDone: [n_embd]
  std::vector<float> scores;           // and the logits of its score_ids
  // Usage, filled on the final chunk.
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_prompt_tokens = 0;
  // Speculative decoding (EngineOptions::speculative): drafts verified for this request and
  // the ones taken (each taken draft is a token that cost no pass of its own).
  int64_t spec_drafted = 0, spec_accepted = 0;
};

using SessionId = uint64_t;
struct RequestHandle {
  uint64_t engine_id = 0;  // which engine issued it (foreign handles are rejected)
  SessionId session = 0;
  uint64_t request = 0;
};

struct EngineStats {
  int64_t kv_blocks_total = 0, kv_blocks_used = 0;
  uint64_t kv_bytes = 0;
  int64_t running = 0, waiting = 0, paused = 0;
  // Prefix cache: lookups (one per finished request), requests that reused a prefix, the
  // prompt tokens reused, and the tokens the global layers had cached but that were
  // recomputed because the sliding layers' window before them had been reused (the sliding
  // pool holds max_seqs rings: more sequences keep more windows cached).
  uint64_t prefix_cache_queries = 0, prefix_cache_hits = 0, prefix_cache_hit_tokens = 0;
  uint64_t prefix_cache_window_miss_tokens = 0;
  // Models with recurrent layers: state checkpoints saved at block boundaries, restored into
  // a new sequence's slot (each restore is a prefix-cache hit), and kept now.
  uint64_t state_checkpoint_saves = 0, state_checkpoint_restores = 0;
  int64_t state_checkpoints_kept = 0;
  uint64_t prompt_tokens = 0, generated_tokens = 0;
  uint64_t requests_finished = 0, requests_cancelled = 0, preemptions = 0;
  int32_t stream_high_water = 0;  // most chunks ever queued on one stream
  // Decode-first planning: measured step costs and the prompt tokens allowed per step
  // while sequences decode (0: no cap yet / not capped).
  double decode_step_ms = 0, prefill_token_ms = 0;
  int64_t prefill_cap = 0;
  // Speculative decoding: decode slices that verified drafts, drafts verified and taken.
  uint64_t spec_verify_steps = 0, spec_drafted = 0, spec_accepted = 0;
};

class Engine {
 public:
  // Loads options.model_path (runs the memory plan first; refuses a configuration that
  // does not fit).
  static Expected<std::unique_ptr<Engine>> create(const EngineOptions& options);
  // Serves an already loaded model (not owned; must outlive the engine).
  static Expected<std::unique_ptr<Engine>> create(const Model& model, const EngineOptions& options);
  virtual ~Engine() = default;

  virtual Expected<SessionId> open_session() = 0;
  // Cancels the session's live requests.
  virtual Status close_session(SessionId session) = 0;
  // Errors: unknown session, empty prompt, prompt + max_tokens over max_model_len,
  // bad sampling values, token id out of range, media spans that overlap, leave the
  // prompt, have the wrong number of values, or (bidirectional) exceed max_batched_tokens.
  virtual Expected<RequestHandle> submit(SessionId session, GenerateRequest request) = 0;
  // Next chunk of a request's stream; blocks up to `timeout` (then returns
  // Status::deadline_exceeded). After a terminal chunk (kDone/kCancelled/kError) the
  // handle is retired and further calls return an error.
  virtual Expected<StreamChunk> next(const RequestHandle& h, std::chrono::milliseconds timeout) = 0;
  virtual Status cancel(const RequestHandle& h) = 0;

  virtual EngineStats stats() const = 0;
  // Blocks until `done(stats())` holds (true) or `timeout` passes (false): waits on the
  // engine's own state changes (a step, a cancel, a close), never on a guessed sleep. The
  // default polls stats(); the engine overrides it with its condition variable.
  virtual bool wait_for_stats(const std::function<bool(const EngineStats&)>& done,
                              std::chrono::milliseconds timeout);
  virtual const ModelConfig& config() const = 0;
  virtual const Tokenizer* tokenizer() const = 0;  // null if the model has none
  virtual const EngineOptions& options() const = 0;
  // True when the model sits behind another server's chat endpoint that renders the
  // template and encodes media itself (a pipeline's chat.generate@1 stage): a chat request
  // then passes its messages on unchanged in GenerateRequest::chat.
  virtual bool forwards_chat() const { return false; }
};

}  // namespace edge
