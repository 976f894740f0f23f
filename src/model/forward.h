// The forward pass over a paged KV cache (model/kv_layout.h).
//
// ForwardPass runs one step: a batch of tokens from one or more sequences, each sequence
// a consecutive slice of the step's tokens continuing from the positions it has cached
// (prefill chunks and single decode tokens mix freely). Matmuls run once over all the
// step's tokens; attention runs per sequence over its own blocks, all sequences in one
// parallel region. Scratch is sized to `max_tokens` per step, never to the model's
// advertised context.
//
// InferenceState is one sequence with its own cache: the simple API the CLI, benchmarks
// and tests use. Sliding-window layers keep only a ring of blocks covering the window.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/memory_ledger.h"
#include "core/status.h"
#include "model/delta_net_mixer.h"
#include "model/kv_layout.h"
#include "model/model.h"
#include "model/moe_ffn.h"

namespace edge {

using ScratchVector = std::vector<float, TaggedAllocator<float, MemCategory::kScratch>>;
using RopeVector = std::vector<float, TaggedAllocator<float, MemCategory::kRope>>;

// Rows that replace token embeddings: media (an image, an audio clip) encoded into the
// LM's embedding space and spliced into the prompt at positions [pos, pos + n). The token
// ids at those positions are ignored (they only key the prefix cache). Bidirectional rows
// attend to each other (Gemma-3 image tokens): a query in the span sees every key up to
// the span's end. A step must then carry the rest of the span with the query that opens
// it (the scheduler never ends a chunk inside a bidirectional span); rows already cached
// were computed with the whole span.
struct EmbeddingSplice {
  int64_t pos = 0;
  int64_t n = 0;
  const float* rows = nullptr;  // [n, n_embd]
  bool bidirectional = false;
};

// Tokens a chunk starting at pos0 takes, given it would take `want` (> 0), so that it never
// ends inside a bidirectional span: cut before a span that starts after pos0, extended to
// the end of one that starts at or before pos0 (then more than `want`: the caller checks
// its budget).
int64_t splice_chunk_tokens(std::span<const EmbeddingSplice> splices, int64_t pos0, int64_t want);

// One sequence's slice of a step.
struct SeqStep {
  // kHidden: the final-normed hidden rows of every token (hidden()), no logits: pooled by
  // embedding requests, which never run the output head.
  enum class Logits : uint8_t { kNone, kLast, kAll, kHidden };
  int64_t pos0 = 0;      // positions already in the cache (the slice starts there)
  int64_t n_tokens = 0;  // tokens of this sequence in the step (consecutive)
  // Logical block -> physical block id, per layer group (kKvGlobal, kKvSliding), covering
  // at least positions [0, pos0 + n_tokens); entries of blocks that no query of this step
  // can see may be -1 (released by a sliding ring).
  std::span<const int32_t> blocks[2];
  Logits logits = Logits::kLast;
  // The sequence's spliced rows (any order; those outside the slice are skipped).
  std::span<const EmbeddingSplice> splices;
  // Its recurrent state slot in the KvStorage (models with LayerConfig::recurrent layers;
  // -1 otherwise). A slice with pos0 == 0 starts the sequence: the slot is zeroed first.
  int32_t state_slot = -1;
  // Speculative verify steps of such a model: [n_state_layers, n_tokens, state floats per
  // layer] receives the state after each token of the slice (model/delta_net_mixer.h), so
  // the sequence can go back to the last accepted one. nullptr: not kept.
  float* state_snapshots = nullptr;
};

class ForwardPass {
 public:
  // pool: the threads the step's regions run on (nullptr: the model's). A pool runs one
  // region at a time, so two passes that may run at once need two pools.
  static Expected<ForwardPass> create(const Model& model, int64_t max_tokens,
                                      ThreadPool* pool = nullptr);
  ForwardPass(ForwardPass&&) noexcept = default;
  ForwardPass& operator=(ForwardPass&&) noexcept = default;

  // Writes the K/V of every token into `kv` and returns logits [rows, n_vocab]: for each
  // sequence in order, 1 row (kLast), n_tokens rows (kAll) or none. The span is valid
  // until the next run. Errors: empty step, more than max_tokens tokens, slices that do not
  // add up to the tokens, a token id outside the vocabulary, a block table too short.
  Expected<std::span<const float>> run(std::span<const int32_t> tokens,
                                       std::span<const SeqStep> seqs, KvStorage& kv);
  int64_t max_tokens() const { return max_tokens_; }
  // The final-normed hidden rows [rows, n_embd] of the last run: one per logits row (the
  // input of the output head; Qwen3-TTS feeds the talker's to its code predictor), then
  // the rows of the kHidden sequences, in sequence order. Valid until the next run.
  std::span<const float> hidden() const {
    return std::span<const float>(xn_.data(),
                                  static_cast<size_t>(hidden_rows_ * model_->config().n_embd));
  }
  // Bytes of scratch held (ledger category "scratch").
  uint64_t scratch_bytes() const;
  // Bytes of the RoPE cos/sin tables a pass of max_tokens holds (ledger category "rope"):
  // one table per distinct RoPE among the layers (see ropes_), sized to the step.
  static int64_t rope_table_bytes(const ModelConfig& c, int64_t max_tokens);

 private:
  ForwardPass(const Model& model, int64_t max_tokens, ThreadPool* pool);
  Status check_step(std::span<const int32_t> tokens, std::span<const SeqStep> seqs,
                    const KvStorage& kv) const;
  void embed(std::span<const int32_t> tokens, std::span<const SeqStep> seqs);
  // Fills attn_ with the attention calls of layer group g: one per sequence, split where
  // bidirectional spans need their queries to see keys ahead of them.
  void plan_attention(int layer, std::span<const SeqStep> seqs, KvStorage& kv);
  void attention_block(int layer, std::span<const SeqStep> seqs, KvStorage& kv);
  // q_ and the output gate from the gated q projection (ModelConfig::attn_output_gate).
  void split_gated_q();
  // The Gated DeltaNet mixer of a recurrent layer (delta_net_mixer.h) and its residual.
  void delta_net_block(int layer, std::span<const SeqStep> seqs, KvStorage& kv);
  // Writes the K/V rows of the step's tokens [t0, t1) into their cache slots.
  void store_kv(int layer, std::span<const SeqStep> seqs, KvStorage& kv, int64_t t0, int64_t t1);
  void ffn_block(int layer);
  // x += [post_norm](y) over the step's rows [n, n_embd] (y: xn_ or the MoE output).
  void residual_add(const float* post_norm, float* y);
  // Runs fn(t0, t1) over the step's token rows [0, n_): split over the pool when the step
  // has enough tokens to repay a fork/join (prefill), on this thread otherwise (decode).
  template <class Fn>
  void for_token_rows(Fn&& fn);
  void compute_logits(std::span<const SeqStep> seqs);
  // Distinct RoPE parameters among c's layers; of_layer[l] indexes them (-1: no rotary
  // dims). Each layer type has its own theta, rotary dims, scale, frequency factors.
  static std::vector<RopeParams> distinct_ropes(const ModelConfig& c, std::vector<int>* of_layer);
  // The row stride of a cos/sin table: the widest rotary dims among ropes.
  static int64_t max_rotary_dim(const std::vector<RopeParams>& ropes);
  // Fills rope_cs_ for the step's tokens: the angles of each distinct layer RoPE.
  void rope_tables();

  const Model* model_;
  ThreadPool* pool_;
  int64_t max_tokens_ = 0;
  int64_t n_ = 0;                // tokens in the current step
  int64_t hidden_rows_ = 0;      // logits rows of the last run (their normed rows in xn_)
  std::vector<int64_t> pos_;     // [max_tokens] position of each token of the step
  std::vector<int32_t> seq_of_;  // [max_tokens] index into the step's seqs of each token
  ScratchVector x_;              // [n, n_embd] residual stream
  ScratchVector xn_;             // [n, n_embd] normed input / block output
  ScratchVector q_;              // [n, q_dim]
  ScratchVector k_;              // [n, kv_dim] this step's keys before they enter the cache
  ScratchVector v_;              // [n, kv_dim]
  ScratchVector att_;            // [n, q_dim]
  ScratchVector gate_;           // [n, n_ff]
  ScratchVector up_;             // [n, n_ff]
  ScratchVector logits_;         // [rows, n_vocab]
  ScratchVector qg_;             // [n, 2 q_dim] gated q projection (per head q, then gate)
  ScratchVector attn_gate_;      // [n, q_dim] the attention output gate
  DeltaNetMixer delta_;          // recurrent layers' scratch (empty without them)
  std::vector<DeltaNetSlice> delta_slices_;
  MoeFfn moe_;               // MoE layers' scratch (empty for a dense model)
  ScratchVector block_out_;  // [n, n_embd] the MoE FFN's or the DeltaNet mixer's output
  std::vector<const uint8_t*> block_ptrs_;  // K then V block pointers of every sequence
  std::vector<AttentionArgs> attn_;         // [n_seqs]
  // Distinct RoPE parameters among the layers, each layer's index into them (-1: no
  // rotary dims), and their cos/sin per token: [n_rope][max_tokens][rope_stride_], so q
  // and k of every layer of a type share one computation of the angles per step.
  std::vector<RopeParams> ropes_;
  std::vector<int> rope_of_layer_;
  int64_t rope_stride_ = 0;
  RopeVector rope_cs_;
};

struct InferenceOptions {
  KvTypes kv_types = KvType::kF32;
  bool sliding_ring = true;  // false: sliding layers keep every position (masked)
  int64_t max_step = 512;    // longer prompts run in chunks of this many tokens
};

class InferenceState {
 public:
  // n_ctx: positions this sequence may hold (prompt + generated), > 0.
  static Expected<InferenceState> create(const Model& model, int64_t n_ctx,
                                         const InferenceOptions& options = {});

  // Runs tokens at positions n_past() .. n_past()+n-1 and appends them to the cache.
  // Returns logits [n, n_vocab] (all_logits) or [1, n_vocab] for the last token; the span
  // is valid until the next call. Errors: empty batch, a token id outside the vocabulary,
  // or more positions than n_ctx (the cache is left unchanged on error).
  Expected<std::span<const float>> forward(std::span<const int32_t> tokens,
                                           bool all_logits = false);
  // Same with spliced rows (positions absolute, inside [n_past, n_past + n)). A prompt
  // longer than a step is chunked without ending a chunk inside a bidirectional span
  // (refused when such a span is longer than max_step).
  Expected<std::span<const float>> forward(std::span<const int32_t> tokens, bool all_logits,
                                           std::span<const EmbeddingSplice> splices);
  // The final-normed hidden row [n_embd] of the last token of the last forward (the
  // output head's input).
  std::span<const float> last_hidden() const;

  int64_t n_past() const { return n_past_; }
  int64_t n_ctx() const { return n_ctx_; }
  // Bytes held by the KV cache (all blocks, both layer groups).
  size_t kv_cache_bytes() const { return kv_.bytes(); }
  const KvLayout& kv_layout() const { return kv_.layout(); }
  // Forget positions >= n (n <= n_past): the next forward continues from position n.
  // Refused when a sliding ring has already overwritten positions the window would need,
  // and for a model with recurrent layers unless n is 0, n_past, or a position inside the
  // last forward when that kept its states (keep_step_states): their state holds the whole
  // past in a fixed size, so only a kept copy can bring it back.
  Status truncate(int64_t n);
  void reset() { n_past_ = 0, kept_n_ = 0; }
  // Models with recurrent layers: forwards of up to max_tokens tokens keep the state after
  // each token ([n_state_layers, max_tokens, state floats] here), so truncate can go back
  // inside them (speculative decoding's rejected drafts). 0: keep none. No-op without
  // recurrent layers.
  Status keep_step_states(int32_t max_tokens);

 private:
  InferenceState(const Model& model, int64_t n_ctx, const InferenceOptions& o, ForwardPass pass,
                 KvStorage kv);

  const Model* model_;
  int64_t n_ctx_ = 0;
  int64_t n_past_ = 0;
  InferenceOptions options_;
  ForwardPass pass_;
  KvStorage kv_;
  std::vector<int32_t> blocks_[2];      // logical -> physical (sliding: modulo the ring)
  ScratchVector logits_;                // [n, n_vocab] when a prompt runs in several chunks
  ScratchVector snapshots_;             // keep_step_states: the states after each token
  int32_t keep_tokens_ = 0;             // forwards of up to this many tokens keep them
  int64_t kept_pos0_ = 0, kept_n_ = 0;  // the positions whose states snapshots_ holds
  int64_t kept_stride_ = 0;             // tokens per layer in snapshots_ (that forward's)
};

}  // namespace edge
