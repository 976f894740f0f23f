// Prefix caching on a model with sliding-window layers (Gemma-3 style: sliding and global
// layers alternate). A request that reuses a cached system prompt longer than the window
// must compute exactly what it computes without the cache: the forward pass over the
// KvCache directly (every logit of the prompt's last token and of the decoded tokens),
// when the cached window is still there, when it has been reused (the hit shrinks or
// disappears), and the engine end to end (tokens, log-probabilities, usage and stats),
// also with many requests inside a tight KV budget.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <thread>

#include "convert/random_model.h"
#include "edge/engine.h"
#include "model/forward.h"
#include "model/model.h"
#include "runtime/kv_cache.h"
#include "runtime/sampler.h"

namespace edge {
namespace {

using namespace std::chrono_literals;

constexpr int32_t kWindow = 32;  // block 16: the window spans 2-3 blocks
constexpr int64_t kStep = 40;    // chunks that do not line up with blocks or the hit

// 4 layers: sliding, global, sliding, global.
const std::string& gemma_path() {
  static const std::string path = [] {
    auto dir = std::filesystem::temp_directory_path() / ("edge_sliding_prefix_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string p = (dir / "g.gguf").string();
    RandomModelOptions o;
    o.arch = "gemma3";
    o.n_layer = 4;
    o.n_embd = 64;
    o.n_vocab = 512;
    o.sliding_window = kWindow;
    o.sliding_pattern = 2;
    EXPECT_TRUE(write_random_model(o, p).ok());
    return p;
  }();
  return path;
}

std::unique_ptr<Model> load_gemma() {
  LoadOptions lo;
  lo.n_threads = 2;
  auto m = Model::load(gemma_path(), lo);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(m).value();
}

// 100 tokens of "system prompt" (6 whole blocks + 4), then `user_len` tokens of a request.
std::vector<int32_t> conversation(int user_seed, int user_len) {
  std::vector<int32_t> p;
  for (int i = 0; i < 100; ++i) p.push_back(3 + (i * 37) % 500);
  for (int i = 0; i < user_len; ++i) p.push_back(3 + (user_seed * 131 + i * 17) % 500);
  return p;
}

// max_seqs rings of sliding blocks and room for 64 global blocks (4 full contexts), so
// that the global group keeps every prefix of these tests cached.
KvCache make_cache(const Model& m, bool prefix, int32_t max_seqs) {
  KvCacheOptions o;
  o.settings = {KvType::kF16, 16};
  o.max_model_len = 256;
  o.max_step = kStep;
  o.max_seqs = max_seqs;
  o.prefix_cache = prefix;
  const KvLayout l = KvLayout::make(m.config(), o.settings);
  o.budget_bytes = static_cast<uint64_t>(64 * l.block_bytes[kKvGlobal] +
                                         max_seqs * l.blocks_per_seq(kKvSliding, 256, kStep) * l.block_bytes[kKvSliding]);
  auto kv = KvCache::create(m.config(), o);
  EXPECT_TRUE(kv.ok()) << kv.status().to_string();
  EXPECT_EQ(kv->n_blocks(kKvGlobal), 64);
  return std::move(kv).value();
}

struct Computed {
  int64_t hit = 0;
  int64_t window_miss = 0;
  std::vector<std::vector<float>> logits;  // the prompt's last token, then each decoded one
};

// Runs one step of s over tokens[pos0, pos0 + n) and commits it; returns the last logits.
std::vector<float> step(KvCache& kv, ForwardPass& pass, SeqKv& s, const std::vector<int32_t>& tokens,
                        int64_t pos0, int64_t n) {
  EXPECT_TRUE(kv.reserve(s, pos0 + n)) << pos0;
  SeqStep st;
  st.pos0 = pos0;
  st.n_tokens = n;
  st.blocks[0] = s.blocks[0];
  st.blocks[1] = s.blocks[1];
  auto out = pass.run(std::span(tokens).subspan(static_cast<size_t>(pos0), static_cast<size_t>(n)),
                      std::span<const SeqStep>(&st, 1), kv.storage());
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  kv.commit(s, tokens, pos0 + n);
  return out.ok() ? std::vector<float>(out->begin(), out->end()) : std::vector<float>{};
}

// The scheduler's path for one sequence: attach the cached prefix, compute the rest of the
// prompt in chunks, decode `n_decode` greedy tokens; then release.
Computed run(KvCache& kv, ForwardPass& pass, std::vector<int32_t> tokens, int n_decode) {
  Computed c;
  SeqKv s;
  c.hit = kv.attach_prefix(s, tokens);
  c.window_miss = s.window_miss;
  std::vector<float> last;
  for (int64_t pos = c.hit; pos < static_cast<int64_t>(tokens.size()); pos += kStep)
    last = step(kv, pass, s, tokens, pos, std::min<int64_t>(kStep, static_cast<int64_t>(tokens.size()) - pos));
  for (int i = 0;; ++i) {
    c.logits.push_back(last);
    if (i == n_decode || last.empty()) break;
    tokens.push_back(argmax(last));
    last = step(kv, pass, s, tokens, static_cast<int64_t>(tokens.size()) - 1, 1);
  }
  kv.release(s);
  return c;
}

float max_abs_diff(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  EXPECT_EQ(a.size(), b.size());
  float d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    EXPECT_EQ(a[i].size(), b[i].size());
    for (size_t j = 0; j < std::min(a[i].size(), b[i].size()); ++j) d = std::max(d, std::abs(a[i][j] - b[i][j]));
  }
  return d;
}

TEST(SlidingPrefix, ModelAlternatesSlidingAndGlobalLayers) {
  auto m = load_gemma();
  const KvCache kv = make_cache(*m, true, 2);
  EXPECT_TRUE(kv.layout().has_group(kKvGlobal));
  EXPECT_TRUE(kv.layout().has_group(kKvSliding));
  EXPECT_EQ(kv.layout().window, kWindow);
  EXPECT_TRUE(kv.prefix_cache_enabled());
}

// A second request sharing the 100-token system prompt reuses 96 positions (6 blocks; the
// window before 96 is blocks 4 and 5) and its logits are bitwise those computed without
// the cache, for the prompt and for 8 decoded tokens (the ring keeps turning over the
// attached blocks).
TEST(SlidingPrefix, HitComputesTheLogitsOfNoCache) {
  auto m = load_gemma();
  auto pass = ForwardPass::create(*m, kStep);
  ASSERT_TRUE(pass.ok());
  KvCache on = make_cache(*m, true, 2), off = make_cache(*m, false, 2);
  EXPECT_EQ(run(on, *pass, conversation(1, 20), 4).hit, 0);
  const Computed hit = run(on, *pass, conversation(2, 20), 8);
  const Computed ref = run(off, *pass, conversation(2, 20), 8);
  EXPECT_EQ(hit.hit, 96);
  EXPECT_EQ(hit.window_miss, 0);
  EXPECT_EQ(ref.hit, 0);
  EXPECT_EQ(max_abs_diff(hit.logits, ref.logits), 0.0f);
  EXPECT_EQ(on.blocks_used(), 0);
}

// One sequence's ring (max_seqs 1): a long first request reuses the system prompt's window
// blocks for its own continuation, so the next request finds all 6 global blocks but no
// window: no hit, 96 positions reported as missed, same logits. Then a hit that shrinks.
TEST(SlidingPrefix, ReusedWindowShrinksTheHitAndStaysExact) {
  auto m = load_gemma();
  auto pass = ForwardPass::create(*m, kStep);
  ASSERT_TRUE(pass.ok());
  KvCache on = make_cache(*m, true, 1), off = make_cache(*m, false, 1);
  EXPECT_EQ(run(on, *pass, conversation(1, 120), 0).hit, 0);
  const Computed none = run(on, *pass, conversation(2, 20), 4);
  EXPECT_EQ(none.hit, 0);
  EXPECT_EQ(none.window_miss, 96);
  EXPECT_EQ(max_abs_diff(none.logits, run(off, *pass, conversation(2, 20), 4).logits), 0.0f);
  EXPECT_EQ(on.blocks_used(), 0);


  // Afresh: a request computes the whole system prompt; a shorter one reuses its first 64
  // positions (their window refreshed, the later blocks pushed out by its own step); an
  // unrelated request churns the ring. The next full request finds 96 positions in the
  // global group but a window only before 64.
  on = make_cache(*m, true, 1);
  EXPECT_EQ(run(on, *pass, conversation(2, 20), 4).hit, 0);
  std::vector<int32_t> shorter = conversation(3, 0);
  shorter.resize(76);
  EXPECT_EQ(run(on, *pass, shorter, 0).hit, 64);
  EXPECT_EQ(run(on, *pass, std::vector<int32_t>(40, 7), 0).hit, 0);
  const Computed shrunk = run(on, *pass, conversation(5, 20), 4);
  EXPECT_EQ(shrunk.hit, 64);
  EXPECT_EQ(shrunk.window_miss, 32);
  EXPECT_EQ(max_abs_diff(shrunk.logits, run(off, *pass, conversation(5, 20), 4).logits), 0.0f);
  EXPECT_EQ(on.blocks_used(), 0);
}

struct Result {
  std::vector<int32_t> tokens;
  std::vector<TokenLogprob> logprobs;
  int64_t cached = -1;
  ChunkKind end = ChunkKind::kError;
};

Result drain(Engine& e, const RequestHandle& h) {
  Result r;
  for (;;) {
    auto c = e.next(h, 60s);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    if (!c.ok()) return r;
    r.tokens.insert(r.tokens.end(), c->tokens.begin(), c->tokens.end());
    r.logprobs.insert(r.logprobs.end(), c->logprobs.begin(), c->logprobs.end());
    if (c->kind != ChunkKind::kTokens) {
      r.end = c->kind;
      r.cached = c->cached_prompt_tokens;
      return r;
    }
  }
}

GenerateRequest request(std::vector<int32_t> prompt, int max_tokens) {
  GenerateRequest g;
  g.prompt = std::move(prompt);
  g.params.max_tokens = max_tokens;
  g.params.ignore_eos = true;
  g.params.logprobs = 5;
  return g;
}

std::unique_ptr<Engine> make_engine(const Model& m, bool prefix, uint64_t budget = 0, int32_t max_seqs = 4) {
  EngineOptions o;
  o.max_model_len = 256;
  o.max_batched_tokens = kStep;
  o.max_seqs = max_seqs;
  o.prefix_cache = prefix;
  o.kv_budget_bytes = budget;
  auto e = Engine::create(m, o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return std::move(e).value();
}

Result generate(Engine& e, std::vector<int32_t> prompt, int max_tokens) {
  auto s = e.open_session();
  EXPECT_TRUE(s.ok());
  auto h = e.submit(*s, request(std::move(prompt), max_tokens));
  EXPECT_TRUE(h.ok()) << h.status().to_string();
  return h.ok() ? drain(e, *h) : Result{};
}

void expect_same(const Result& got, const Result& want, const std::string& what) {
  EXPECT_EQ(got.end, ChunkKind::kDone) << what;
  EXPECT_EQ(got.tokens, want.tokens) << what;
  ASSERT_EQ(got.logprobs.size(), want.logprobs.size()) << what;
  for (size_t i = 0; i < got.logprobs.size(); ++i) {
    EXPECT_EQ(got.logprobs[i].logprob, want.logprobs[i].logprob) << what << " token " << i;
    EXPECT_EQ(got.logprobs[i].top, want.logprobs[i].top) << what << " token " << i;
  }
}

// The engine end to end: the second turn with the same system prompt reports 96 cached
// prompt tokens and produces the tokens and log-probabilities of an engine without cache.
TEST(SlidingPrefix, EngineServesARepeatedSystemPromptExactly) {
  auto m = load_gemma();
  auto on = make_engine(*m, true);
  auto off = make_engine(*m, false);
  const Result first = generate(*on, conversation(1, 20), 12);
  const Result second = generate(*on, conversation(2, 20), 12);
  EXPECT_EQ(first.cached, 0);
  EXPECT_EQ(second.cached, 96);
  expect_same(first, generate(*off, conversation(1, 20), 12), "first");
  expect_same(second, generate(*off, conversation(2, 20), 12), "second");
  const EngineStats st = on->stats();
  EXPECT_EQ(st.prefix_cache_queries, 2u);
  EXPECT_EQ(st.prefix_cache_hits, 1u);
  EXPECT_EQ(st.prefix_cache_hit_tokens, 96u);
  EXPECT_EQ(st.prefix_cache_window_miss_tokens, 0u);
  EXPECT_EQ(st.kv_blocks_used, 0);
  EXPECT_EQ(off->stats().prefix_cache_hits, 0u);
}

// Sixteen requests at once over a budget of one and a half sequences: the pool is exactly
// what the budget pays for, requests are preempted and re-admitted (finding their own
// prefix again), prefixes are shared, and every request produces what it produces alone
// without the cache.
TEST(SlidingPrefix, BudgetHoldsUnderManyRequests) {
  auto m = load_gemma();
  const KvLayout layout = KvLayout::make(m->config(), KvSettings{KvType::kF16, 16});
  const uint64_t one_seq = layout.bytes_for(1, 256, kStep);
  const uint64_t budget = one_seq + one_seq / 2;
  auto on = make_engine(*m, true, budget);
  auto off = make_engine(*m, false);
  constexpr int kRequests = 16;
  std::vector<Result> alone;
  for (int i = 0; i < kRequests; ++i) alone.push_back(generate(*off, conversation(10 + i % 5, 20 + i), 24));
  std::vector<Result> together(kRequests);
  std::vector<std::thread> clients;
  for (int i = 0; i < kRequests; ++i)
    clients.emplace_back([&, i] { together[i] = generate(*on, conversation(10 + i % 5, 20 + i), 24); });
  for (auto& t : clients) t.join();
  for (int i = 0; i < kRequests; ++i) expect_same(together[i], alone[i], "request " + std::to_string(i));
  const EngineStats st = on->stats();
  EXPECT_LE(st.kv_bytes, budget);
  EXPECT_EQ(st.kv_blocks_used, 0);
  EXPECT_GT(st.prefix_cache_hits, 0u);
  EXPECT_EQ(st.requests_finished, static_cast<uint64_t>(kRequests));
  std::printf("budget %llu bytes, pool %llu bytes, %llu hits, %llu tokens reused, %llu window-miss, %llu preemptions\n",
              static_cast<unsigned long long>(budget), static_cast<unsigned long long>(st.kv_bytes),
              static_cast<unsigned long long>(st.prefix_cache_hits),
              static_cast<unsigned long long>(st.prefix_cache_hit_tokens),
              static_cast<unsigned long long>(st.prefix_cache_window_miss_tokens),
              static_cast<unsigned long long>(st.preemptions));
}

}  // namespace
}  // namespace edge
