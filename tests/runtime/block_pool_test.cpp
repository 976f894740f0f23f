// Block pool (exact block ids: LRU free list, ref counts, prefix lookups), the KV cache's
// budget split, prefix attach and sliding ring, and the scheduler's step plans.
#include <gtest/gtest.h>

#include <numeric>
#include <optional>

#include "model/config.h"
#include "runtime/block_pool.h"
#include "runtime/kv_cache.h"
#include "runtime/scheduler.h"

namespace edge {
namespace {

TEST(BlockPool, AllocatesInOrderAndReusesTheLeastRecentlyFreed) {
  BlockPool p(4);
  EXPECT_EQ(p.allocate(), 0);
  EXPECT_EQ(p.allocate(), 1);
  EXPECT_EQ(p.allocate(), 2);
  EXPECT_EQ(p.n_free(), 1);
  p.unref(1);
  p.unref(0);
  // Free list: 3 (never used), then 1, then 0.
  EXPECT_EQ(p.allocate(), 3);
  EXPECT_EQ(p.allocate(), 1);
  EXPECT_EQ(p.allocate(), 0);
  EXPECT_EQ(p.allocate(), -1);
  p.ref(2);
  p.unref(2);
  EXPECT_EQ(p.n_free(), 0);
  p.unref(2);
  EXPECT_EQ(p.n_free(), 1);
}

TEST(BlockPool, PrefixLookupRevivesAFreedBlockUntilItIsReused) {
  BlockPool p(3);
  const std::vector<int32_t> toks = {5, 6, 7, 8};
  const uint64_t h = chain_block_hash(0, toks);
  const int32_t b = p.allocate();
  p.set_prefix(b, h, 0, toks);
  EXPECT_EQ(p.lookup(h, 0, toks), b);  // shared: 2 refs
  EXPECT_EQ(p.refs(b), 2);
  p.unref(b);
  p.unref(b);
  EXPECT_EQ(p.n_free(), 3);
  EXPECT_EQ(p.lookup(h, 0, toks), b);  // taken back off the free list
  EXPECT_EQ(p.n_free(), 2);
  const std::vector<int32_t> other = {5, 6, 7, 9};
  EXPECT_EQ(p.lookup(h, 0, other), -1);  // same hash, different tokens: never matched
  EXPECT_EQ(p.lookup(h, 1, toks), -1);   // different parent
  p.unref(b);
  // Allocating every block reuses b last (it was freed last) and forgets its prefix.
  EXPECT_NE(p.allocate(), b);
  EXPECT_NE(p.allocate(), b);
  EXPECT_EQ(p.allocate(), b);
  EXPECT_EQ(p.lookup(h, 0, toks), -1);
  EXPECT_EQ(p.n_cached(), 0u);
}

TEST(BlockPool, ChainedHashesDependOnTheWholePrefix) {
  const std::vector<int32_t> a = {1, 2}, b = {3, 4};
  const uint64_t ha = chain_block_hash(0, a);
  EXPECT_NE(chain_block_hash(ha, b), chain_block_hash(chain_block_hash(0, b), b));
  EXPECT_NE(chain_block_hash(0, a), chain_block_hash(0, b));
  EXPECT_EQ(chain_block_hash(ha, b), chain_block_hash(chain_block_hash(0, a), b));
}

ModelConfig tiny_config(int n_layer, int sliding_every, int32_t window) {
  ModelConfig c;
  c.arch = "llama";
  c.n_vocab = 100;
  c.n_embd = 32;
  c.n_layer = n_layer;
  c.n_head = 4;
  c.n_head_kv = 2;
  c.head_dim = 8;
  c.n_ff = 64;
  c.max_ctx = 1 << 20;
  LayerConfig l;
  l.rotary_dim = 8;
  for (int i = 0; i < n_layer; ++i) {
    LayerConfig li = l;
    if (sliding_every > 0 && i % sliding_every != sliding_every - 1) li.sliding = true, li.window = window;
    c.layers.push_back(li);
  }
  return c;
}

TEST(KvCache, BudgetIsHonouredExactlyAndTooSmallIsRefused) {
  const ModelConfig c = tiny_config(2, 0, 0);
  KvCacheOptions o;
  o.settings = {KvType::kF16, 16};
  o.max_model_len = 64;
  o.max_seqs = 4;
  // Block: 2 layers x (K,V) x 16 positions x 16 dims x 2 bytes = 2048 bytes.
  o.budget_bytes = 2048 * 10 + 1000;
  auto kv = KvCache::create(c, o);
  ASSERT_TRUE(kv.ok()) << kv.status().to_string();
  EXPECT_EQ(kv->n_blocks(kKvGlobal), 10);
  EXPECT_EQ(kv->bytes(), 2048u * 10);
  EXPECT_LE(kv->bytes(), o.budget_bytes);
  o.budget_bytes = 2048 * 3;  // one sequence of 64 positions needs 4 blocks
  auto small = KvCache::create(c, o);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("cannot hold one sequence"), std::string::npos)
      << small.status().message();
}

TEST(KvCache, PrefixBlocksAreSharedAndTheLastTokenIsAlwaysComputed) {
  const ModelConfig c = tiny_config(2, 0, 0);
  KvCacheOptions o;
  o.settings = {KvType::kF16, 4};
  o.max_model_len = 32;
  o.max_seqs = 2;
  auto kv = KvCache::create(c, o);
  ASSERT_TRUE(kv.ok());
  std::vector<int32_t> prompt(10);
  std::iota(prompt.begin(), prompt.end(), 1);
  SeqKv a;
  EXPECT_EQ(kv->attach_prefix(a, prompt), 0);
  ASSERT_TRUE(kv->reserve(a, 10));
  EXPECT_EQ(a.blocks[0], (std::vector<int32_t>{0, 1, 2}));
  kv->commit(a, prompt, 10);  // blocks 0 and 1 are full: registered
  SeqKv b;
  EXPECT_EQ(kv->attach_prefix(b, prompt), 8);
  EXPECT_EQ(b.blocks[0], (std::vector<int32_t>{0, 1}));
  std::vector<int32_t> eight(prompt.begin(), prompt.begin() + 8);
  SeqKv d;
  EXPECT_EQ(kv->attach_prefix(d, eight), 4);  // 8 tokens: the last block is recomputed
  kv->release(a);
  kv->release(b);
  kv->release(d);
  EXPECT_EQ(kv->blocks_used(), 0);
}

TEST(KvCache, SlidingLayersKeepOnlyTheirWindow) {
  const ModelConfig c = tiny_config(4, 4, 8);  // 3 sliding (window 8) + 1 global
  KvCacheOptions o;
  o.settings = {KvType::kF16, 4};
  o.max_model_len = 64;
  o.max_step = 4;
  o.max_seqs = 1;
  auto kv = KvCache::create(c, o);
  ASSERT_TRUE(kv.ok());
  SeqKv s;
  std::vector<int32_t> toks;
  for (int64_t pos = 0; pos < 60; pos += 4) {
    ASSERT_TRUE(kv->reserve(s, pos + 4)) << pos;
    for (int i = 0; i < 4; ++i) toks.push_back(1);
    kv->commit(s, toks, pos + 4);
    int live = 0;
    for (int32_t b : s.blocks[kKvSliding]) live += b >= 0;
    EXPECT_LE(live, 3) << "at " << pos;  // window 8 + step 4 -> at most 3 blocks of 4
  }
  EXPECT_EQ(s.blocks[kKvGlobal].size(), 15u);
  EXPECT_LE(kv->n_blocks(kKvSliding), 4);
}

// Computes `tokens` (reserve + commit, as the scheduler drives it) in steps of `step`.
void compute(KvCache& kv, SeqKv& s, const std::vector<int32_t>& tokens, int64_t from, int64_t step) {
  for (int64_t pos = from; pos < static_cast<int64_t>(tokens.size()); pos += step) {
    const int64_t end = std::min<int64_t>(pos + step, static_cast<int64_t>(tokens.size()));
    ASSERT_TRUE(kv.reserve(s, end)) << pos;
    kv.commit(s, tokens, end);
  }
}

// Sliding model, block 4, window 8, step 4: the ring has 4 blocks per sequence, 8 in all.
struct SlidingFixture {
  SlidingFixture() {
    KvCacheOptions o;
    o.settings = {KvType::kF16, 4};
    o.max_model_len = 64;
    o.max_step = 4;
    o.max_seqs = 2;
    auto k = KvCache::create(tiny_config(4, 4, 8), o);  // 3 sliding + 1 global
    EXPECT_TRUE(k.ok());
    kv.emplace(std::move(k).value());
    EXPECT_EQ(kv->n_blocks(kKvSliding), 8);
    a.resize(30);
    std::iota(a.begin(), a.end(), 1);
  }
  std::vector<int32_t> with_tail(size_t shared, size_t n) const {  // a's first `shared`, then new
    std::vector<int32_t> p(a.begin(), a.begin() + static_cast<int64_t>(shared));
    while (p.size() < n) p.push_back(90 + static_cast<int32_t>(p.size() % 7));
    return p;
  }
  std::optional<KvCache> kv;
  std::vector<int32_t> a;
};

// A prompt sharing 24 positions with one computed before reuses them: all 6 global blocks,
// and of the sliding blocks only the window the query at 24 sees (blocks 4 and 5; the
// ring had returned them to the pool with their hashes, in exact LRU order).
TEST(KvCache, SlidingPrefixTakesTheWindowBeforeTheHit) {
  SlidingFixture f;
  KvCache& kv = *f.kv;
  SeqKv a;
  compute(kv, a, f.a, 0, 4);
  EXPECT_EQ(a.blocks[kKvSliding], (std::vector<int32_t>{-1, -1, -1, -1, -1, 5, 6, 7}));
  kv.release(a);
  SeqKv b;
  const auto prompt = f.with_tail(24, 30);
  EXPECT_EQ(kv.attach_prefix(b, prompt), 24);
  EXPECT_EQ(b.blocks[kKvGlobal], (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(b.blocks[kKvSliding], (std::vector<int32_t>{-1, -1, -1, -1, 4, 5}));
  EXPECT_EQ(b.window_miss, 0);
  // From here b runs as if it had computed the 24 positions itself: the ring never holds
  // more than its 4 blocks.
  for (int64_t pos = 24; pos < 30; pos += 4) {
    ASSERT_TRUE(kv.reserve(b, std::min<int64_t>(pos + 4, 30)));
    int live = 0;
    for (int32_t blk : b.blocks[kKvSliding]) live += blk >= 0;
    EXPECT_LE(live, 4) << pos;
    kv.commit(b, prompt, std::min<int64_t>(pos + 4, 30));
  }
  kv.release(b);
  EXPECT_EQ(kv.blocks_used(), 0);
}

// When the window before the longest global hit has been reused, the hit shrinks to the
// longest prefix whose window is still cached: here 12 positions, whose window a shorter
// prompt refreshed, and the 12 global-cached positions past it are reported as missed.
TEST(KvCache, SlidingPrefixShrinksToAWindowStillCached) {
  SlidingFixture f;
  KvCache& kv = *f.kv;
  SeqKv a, d, churn, b;
  compute(kv, a, f.a, 0, 4);
  kv.release(a);  // sliding free list: 0 1 2 3 4 5 6 7, all hashed but 7 (not full)
  const auto shorter = f.with_tail(12, 14);
  EXPECT_EQ(kv.attach_prefix(d, shorter), 12);  // takes the window of 12: blocks 1, 2
  EXPECT_EQ(d.blocks[kKvSliding], (std::vector<int32_t>{-1, 1, 2}));
  compute(kv, d, shorter, 12, 4);
  kv.release(d);  // free list: 3 4 5 6 7 1 2 0 (0 reused by d, hash forgotten)
  ASSERT_TRUE(kv.reserve(churn, 20));  // an unrelated sequence takes 3 4 5 6 7
  kv.release(churn);
  const auto prompt = f.with_tail(24, 30);
  EXPECT_EQ(kv.attach_prefix(b, prompt), 12);
  EXPECT_EQ(b.blocks[kKvGlobal], (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(b.blocks[kKvSliding], (std::vector<int32_t>{-1, 1, 2}));
  EXPECT_EQ(b.window_miss, 12);
  kv.release(b);
  // With the window of every prefix gone there is no hit at all.
  ASSERT_TRUE(kv.reserve(churn, 32));
  kv.release(churn);
  SeqKv e;
  EXPECT_EQ(kv.attach_prefix(e, prompt), 0);
  EXPECT_TRUE(e.blocks[kKvGlobal].empty());
  EXPECT_EQ(e.window_miss, 24);
  EXPECT_EQ(kv.blocks_used(), 0);
}

TEST(Scheduler, TokenBudgetChunksPromptsAndDecodesTogether) {
  const ModelConfig c = tiny_config(2, 0, 0);
  KvCacheOptions o;
  o.settings = {KvType::kF16, 4};
  o.max_model_len = 64;
  o.max_seqs = 4;
  auto kv = KvCache::create(c, o);
  ASSERT_TRUE(kv.ok());
  Scheduler sched({2, 8}, &*kv);
  SchedSeq a, b, d;
  a.id = 1, a.tokens.assign(10, 3), a.n_prompt = 10;
  b.id = 2, b.tokens.assign(3, 4), b.n_prompt = 3;
  d.id = 3, d.tokens.assign(2, 5), d.n_prompt = 2;
  sched.add(&a);
  sched.add(&b);
  sched.add(&d);
  StepPlan p1 = sched.schedule();  // a's first chunk of 8 fills the budget
  ASSERT_EQ(p1.seqs.size(), 1u);
  EXPECT_EQ(p1.seqs[0].n_tokens, 8);
  EXPECT_FALSE(p1.seqs[0].wants_logits);
  sched.complete(p1);
  StepPlan p2 = sched.schedule();  // a's last 2, then b's 3; d waits (max_seqs 2)
  ASSERT_EQ(p2.seqs.size(), 2u);
  EXPECT_EQ(p2.seqs[0].seq, &a);
  EXPECT_EQ(p2.seqs[0].n_tokens, 2);
  EXPECT_TRUE(p2.seqs[0].wants_logits);
  EXPECT_EQ(p2.seqs[1].seq, &b);
  EXPECT_EQ(p2.n_tokens, 5);
  sched.complete(p2);
  a.tokens.push_back(9);  // sampled: one decode token each
  b.tokens.push_back(9);
  StepPlan p3 = sched.schedule();
  EXPECT_EQ(p3.n_tokens, 2);
  sched.complete(p3);
  sched.remove(&a);
  StepPlan p4 = sched.schedule();  // a finished: d is admitted
  ASSERT_EQ(p4.seqs.size(), 1u);
  EXPECT_EQ(p4.seqs[0].seq, &d);
}

// Decode first: a sequence that is generating gets its token before any prompt chunk, and
// while one decodes a step carries at most the prompt cap; alone, a prompt gets the budget.
TEST(Scheduler, DecodesComeFirstAndPromptsBesideThemAreCapped) {
  const ModelConfig c = tiny_config(2, 0, 0);
  KvCacheOptions o;
  o.settings = {KvType::kF16, 4};
  o.max_model_len = 64;
  o.max_seqs = 4;
  auto kv = KvCache::create(c, o);
  ASSERT_TRUE(kv.ok());
  Scheduler sched({4, 16}, &*kv);
  sched.set_prefill_cap(3);
  SchedSeq a, b;
  a.id = 1, a.tokens.assign(4, 3), a.n_prompt = 4;
  sched.add(&a);
  StepPlan p1 = sched.schedule();  // nothing decodes: the prompt is not capped
  ASSERT_EQ(p1.seqs.size(), 1u);
  EXPECT_EQ(p1.n_tokens, 4);
  sched.complete(p1);
  a.tokens.push_back(9);  // a decodes from here
  b.id = 2, b.tokens.assign(20, 4), b.n_prompt = 20;
  sched.add(&b);
  StepPlan p2 = sched.schedule();
  ASSERT_EQ(p2.seqs.size(), 2u);
  EXPECT_EQ(p2.seqs[0].seq, &a);  // the decode token first
  EXPECT_EQ(p2.seqs[0].n_tokens, 1);
  EXPECT_EQ(p2.seqs[1].seq, &b);
  EXPECT_EQ(p2.seqs[1].n_tokens, 3) << "the prompt beside a decode is capped";
  sched.complete(p2);
  a.tokens.push_back(9);
  StepPlan p3 = sched.schedule();  // b's prompt (running now) is capped too
  ASSERT_EQ(p3.seqs.size(), 2u);
  EXPECT_EQ(p3.seqs[0].seq, &a);
  EXPECT_EQ(p3.seqs[1].n_tokens, 3);
  sched.complete(p3);
  sched.remove(&a);  // the decoder is gone: b gets the whole budget
  StepPlan p4 = sched.schedule();
  ASSERT_EQ(p4.seqs.size(), 1u);
  EXPECT_EQ(p4.seqs[0].n_tokens, 14);
  sched.set_prefill_cap(0);
}

// Two global layers, block 4, context 16, a budget of exactly 6 blocks.
KvCache six_block_cache(int32_t max_seqs) {
  KvCacheOptions o;
  o.settings = {KvType::kF16, 4};
  o.max_model_len = 16;
  o.max_seqs = max_seqs;
  o.budget_bytes = 6 * 2 * 2 * 4 * 16 * 2;
  auto kv = KvCache::create(tiny_config(2, 0, 0), o);
  EXPECT_TRUE(kv.ok());
  EXPECT_EQ(kv->n_blocks(kKvGlobal), 6);
  return std::move(kv).value();
}

TEST(Scheduler, PreemptsTheNewestWhenBlocksRunOut) {
  KvCache kv = six_block_cache(2);
  Scheduler sched({2, 64}, &kv);
  SchedSeq a, b;
  a.id = 1, a.tokens.assign(12, 1), a.n_prompt = 12;  // 3 blocks
  b.id = 2, b.tokens.assign(12, 2), b.n_prompt = 12;  // 3 blocks
  sched.add(&a);
  sched.add(&b);
  StepPlan p1 = sched.schedule();
  ASSERT_EQ(p1.seqs.size(), 2u);
  sched.complete(p1);
  a.tokens.push_back(7);  // position 12 needs a 4th block: b is preempted
  b.tokens.push_back(7);
  StepPlan p2 = sched.schedule();
  ASSERT_EQ(p2.preempted.size(), 1u);
  EXPECT_EQ(p2.preempted[0], &b);
  EXPECT_EQ(b.n_computed, 0);
  ASSERT_EQ(p2.seqs.size(), 1u);
  EXPECT_EQ(p2.seqs[0].seq, &a);
  EXPECT_EQ(sched.preemptions(), 1u);
}

// A sequence the pool cannot take yet waits without holding blocks (what it attached from
// the prefix cache stays cached), and finds its prefix again once it is admitted.
TEST(Scheduler, AWaitingSequenceHoldsNoBlocks) {
  KvCache kv = six_block_cache(3);
  Scheduler sched({3, 64}, &kv);
  SchedSeq a, d, b;
  a.id = 1, a.tokens.resize(12), a.n_prompt = 12;  // 3 blocks
  std::iota(a.tokens.begin(), a.tokens.end(), 1);
  d.id = 2, d.tokens.assign(8, 50), d.n_prompt = 8;  // 2 blocks
  sched.add(&a);
  sched.add(&d);
  StepPlan p1 = sched.schedule();
  ASSERT_EQ(p1.seqs.size(), 2u);
  sched.complete(p1);
  b.id = 3, b.tokens.assign(a.tokens.begin(), a.tokens.begin() + 8), b.n_prompt = 16;
  b.tokens.resize(16, 60);  // shares a's first 2 blocks, needs 2 more: 1 is free
  sched.add(&b);
  EXPECT_TRUE(sched.schedule().empty());
  EXPECT_TRUE(b.kv.blocks[kKvGlobal].empty());
  EXPECT_EQ(b.n_computed, 0);
  EXPECT_EQ(kv.blocks_used(), 5);
  sched.remove(&d);
  StepPlan p3 = sched.schedule();
  ASSERT_EQ(p3.seqs.size(), 1u);
  EXPECT_EQ(p3.seqs[0].seq, &b);
  EXPECT_EQ(p3.seqs[0].pos0, 8);
  EXPECT_EQ(b.cached_prompt, 8);
}

}  // namespace
}  // namespace edge
