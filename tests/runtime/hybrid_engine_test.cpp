// The engine on a hybrid model (Qwen3.5: Gated DeltaNet layers with a state slot per
// sequence beside gated attention): concurrent greedy requests, prompts chunked beside
// decodes, equal each request run alone through the single-sequence forward pass; more
// requests than slots reuse them (a reused slot starts from zeros); a repeated prompt, or the
// next turn of a conversation, resumes from a state checkpoint.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "convert/random_model.h"
#include "core/memory_ledger.h"
#include "edge/engine.h"
#include "model/forward.h"
#include "model/kv_layout.h"
#include "model/model.h"

namespace edge {
namespace {

using namespace std::chrono_literals;

const std::string& model_path() {
  static const std::string path = [] {
    auto dir = std::filesystem::temp_directory_path() / ("edge_hybrid_engine_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string p = (dir / "qwen35.gguf").string();
    RandomModelOptions o;
    o.arch = "qwen35";
    o.n_layer = 4;
    o.n_embd = 64;
    o.n_head = 4;
    o.n_head_kv = 2;
    o.head_dim = 32;
    o.n_vocab = 512;
    o.seed = 7;
    EXPECT_TRUE(write_random_model(o, p).ok());
    return p;
  }();
  return path;
}

std::unique_ptr<Model> load_model() {
  LoadOptions lo;
  lo.n_threads = 2;
  auto m = Model::load(model_path(), lo);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(*m) : nullptr;
}

std::vector<int32_t> prompt_of(int n, int seed) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(3 + (seed * 131 + i * 17) % 500);
  return p;
}

GenerateRequest request(std::vector<int32_t> prompt, int max_tokens) {
  GenerateRequest g;
  g.prompt = std::move(prompt);
  g.params.max_tokens = max_tokens;
  g.params.ignore_eos = true;
  return g;
}

struct Result {
  std::vector<int32_t> tokens;
  ChunkKind end = ChunkKind::kError;
  int64_t cached = 0;
};

Result drain(Engine& e, const RequestHandle& h) {
  Result r;
  for (;;) {
    auto c = e.next(h, 20s);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    if (!c.ok()) return r;
    r.tokens.insert(r.tokens.end(), c->tokens.begin(), c->tokens.end());
    if (c->kind != ChunkKind::kTokens) {
      r.end = c->kind;
      r.cached = c->cached_prompt_tokens;
      return r;
    }
  }
}

// Greedy tokens of one sequence alone (F16 KV, as the engine's default).
std::vector<int32_t> alone(const Model& m, const std::vector<int32_t>& prompt, int n) {
  InferenceOptions io;
  io.kv_types = KvType::kF16;
  auto st = InferenceState::create(m, 512, io);
  EXPECT_TRUE(st.ok());
  std::vector<int32_t> out;
  auto logits = st->forward(prompt);
  for (int i = 0; i < n && logits.ok(); ++i) {
    out.push_back(argmax(*logits));
    logits = st->forward(std::vector<int32_t>{out.back()});
  }
  return out;
}

// Runs the requests at once, each read by its own thread.
std::vector<Result> run_together(Engine& e, const std::vector<GenerateRequest>& reqs) {
  auto s = e.open_session();
  EXPECT_TRUE(s.ok());
  std::vector<RequestHandle> hs;
  for (const GenerateRequest& r : reqs) {
    auto h = e.submit(*s, r);
    EXPECT_TRUE(h.ok()) << h.status().to_string();
    hs.push_back(*h);
  }
  std::vector<Result> out(hs.size());
  std::vector<std::thread> readers;
  for (size_t i = 0; i < hs.size(); ++i) readers.emplace_back([&, i] { out[i] = drain(e, hs[i]); });
  for (auto& t : readers) t.join();
  return out;
}

TEST(HybridEngine, ConcurrentGreedyRequestsEqualEachAlone) {
  auto m = load_model();
  ASSERT_TRUE(m);
  ASSERT_EQ(m->config().n_recurrent_layers(), 3);
  EngineOptions o;
  o.max_model_len = 512;
  o.max_batched_tokens = 48;  // prompts (up to 150 tokens) run in chunks beside decodes
  auto e = Engine::create(*m, o);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  std::vector<GenerateRequest> reqs;
  for (int i = 0; i < 5; ++i) reqs.push_back(request(prompt_of(7 + 35 * i, i), 10 + 2 * i));
  const std::vector<Result> got = run_together(**e, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(got[i].end, ChunkKind::kDone);
    EXPECT_EQ(got[i].tokens, alone(*m, reqs[i].prompt, reqs[i].params.max_tokens)) << "request " << i;
  }
  EXPECT_EQ((*e)->stats().kv_blocks_used, 0);
}

TEST(HybridEngine, MoreRequestsThanSlotsReuseThemFromZeros) {
  auto m = load_model();
  ASSERT_TRUE(m);
  EngineOptions o;
  o.max_model_len = 256;
  o.max_seqs = 2;  // two state slots for six requests
  auto e = Engine::create(*m, o);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  std::vector<GenerateRequest> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(request(prompt_of(20 + 9 * i, 10 + i), 8));
  const std::vector<Result> got = run_together(**e, reqs);
  for (size_t i = 0; i < reqs.size(); ++i)
    EXPECT_EQ(got[i].tokens, alone(*m, reqs[i].prompt, 8)) << "request " << i;
}

// The prefix cache through state checkpoints (runtime/kv_cache.h): a repeated prompt resumes
// from the state saved at its last whole block, and gives the tokens it gave computed whole.
TEST(HybridEngine, RepeatedPromptResumesFromItsStateCheckpoint) {
  auto m = load_model();
  ASSERT_TRUE(m);
  EngineOptions o;
  o.max_model_len = 256;
  auto e = Engine::create(*m, o);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  const GenerateRequest r = request(prompt_of(80, 3), 6);
  const Result first = run_together(**e, {r})[0];
  EXPECT_EQ(first.cached, 0);
  EXPECT_EQ(first.tokens, alone(*m, r.prompt, 6));
  const Result second = run_together(**e, {r})[0];
  EXPECT_EQ(second.cached, 64);  // (80 - 1) / 16 whole blocks
  EXPECT_EQ(second.tokens, first.tokens);
  const EngineStats st = (*e)->stats();
  EXPECT_EQ(st.state_checkpoint_restores, 1u);
  EXPECT_GE(st.state_checkpoint_saves, 2u);  // the prompt's boundary, then 80 (rolling)
  EXPECT_GE(st.state_checkpoints_kept, 2);
  EXPECT_EQ(st.prefix_cache_hits, 1u);
}

// The next turn of a conversation (the last prompt, its answer, a new message) resumes from
// the sequence's rolling checkpoint, the last boundary its decode passed.
TEST(HybridEngine, NextTurnResumesFromTheRollingCheckpoint) {
  auto m = load_model();
  ASSERT_TRUE(m);
  EngineOptions o;
  o.max_model_len = 256;
  auto e = Engine::create(*m, o);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  const GenerateRequest turn1 = request(prompt_of(50, 4), 30);
  const Result a = run_together(**e, {turn1})[0];
  ASSERT_EQ(a.tokens.size(), 30u);  // positions 0..78 computed: boundaries 48 (prompt), 64
  std::vector<int32_t> next = turn1.prompt;
  next.insert(next.end(), a.tokens.begin(), a.tokens.end());
  for (int32_t t : prompt_of(10, 5)) next.push_back(t);
  const GenerateRequest turn2 = request(next, 8);
  const Result b = run_together(**e, {turn2})[0];
  EXPECT_EQ(b.cached, 64);
  EXPECT_EQ(b.tokens, alone(*m, turn2.prompt, 8));
}

// Fewer checkpoints than prompts: the least recently used is replaced, and a prompt whose
// checkpoint is gone is recomputed (same tokens); none at all turns the cache off.
TEST(HybridEngine, EvictedOrDisabledCheckpointsMeanRecompute) {
  auto m = load_model();
  ASSERT_TRUE(m);
  EngineOptions o;
  o.max_model_len = 256;
  o.state_checkpoints = 1;
  auto e = Engine::create(*m, o);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  // 70-token prompts and 3 tokens: the prompt's boundary (64) is the only one a step ends on.
  const GenerateRequest ra = request(prompt_of(70, 6), 3), rb = request(prompt_of(70, 7), 3);
  const Result a1 = run_together(**e, {ra})[0];
  const Result b1 = run_together(**e, {rb})[0];  // takes the one entry
  const Result a2 = run_together(**e, {ra})[0];
  EXPECT_EQ(a2.cached, 0);
  EXPECT_EQ(a2.tokens, a1.tokens);
  const Result a3 = run_together(**e, {ra})[0];  // a2 saved it again
  EXPECT_EQ(a3.cached, 64);
  EXPECT_EQ(a3.tokens, a1.tokens);
  EXPECT_EQ((*e)->stats().state_checkpoints_kept, 1);
  EXPECT_EQ(b1.tokens, alone(*m, rb.prompt, 3));

  o.state_checkpoints = 0;
  auto off = Engine::create(*m, o);
  ASSERT_TRUE(off.ok());
  run_together(**off, {ra});
  const Result again = run_together(**off, {ra})[0];
  EXPECT_EQ(again.cached, 0);
  EXPECT_EQ(again.tokens, a1.tokens);
  EXPECT_EQ((*off)->stats().state_checkpoint_saves, 0u);
}

// Only the attention layers take KV blocks; each sequence's state is a fixed slot: conv
// (K-1) x C floats plus H x d_k x d_v per recurrent layer, whatever the context.
TEST(HybridEngine, StateSlotsAreFixedAndApartFromTheBlocks) {
  auto m = load_model();
  ASSERT_TRUE(m);
  const ModelConfig& c = m->config();
  const KvLayout l = KvLayout::make(c, KvSettings{KvType::kF16, 16});
  EXPECT_EQ(l.n_slots[kKvGlobal], 1);  // layer 3
  EXPECT_EQ(l.n_state_layers, 3);
  const DeltaNetShape& s = c.linear;
  const int64_t per_layer = 3 * s.conv_channels() + int64_t{s.n_v_heads} * s.d_k * s.d_v;
  EXPECT_EQ(l.state_bytes_per_seq(), 3 * per_layer * 4);
  // Blocks: one layer's K and V per position, the same at every context.
  EXPECT_EQ(l.bytes_for(1, 1024, 64), 1024ull * (l.k_row_bytes + l.v_row_bytes));
  EngineOptions o;
  o.max_model_len = 256;
  o.max_seqs = 3;
  auto e = Engine::create(*m, o);
  ASSERT_TRUE(e.ok());
  // Three slots and the default four state checkpoints, each one slot's bytes.
  EXPECT_GE(ledger_current(MemCategory::kState), (3 + 4) * l.state_bytes_per_seq());
  EXPECT_EQ((*e)->stats().state_checkpoints_kept, 0);
}

}  // namespace
}  // namespace edge
