// The engine end to end on a small random model: greedy output equals the single-sequence
// forward pass, concurrent seeded requests equal the same requests alone, cancellation
// frees KV at once, a slow consumer pauses without losing tokens, stale handles are
// refused, prefix caching reuses a repeated prompt, stop strings cut the text, a failed step
// publishes no prefix hashes, two engines over one model run side by side. No test sleeps:
// waits are on the engine's own state (wait_for_stats) or on its streams.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "convert/random_model.h"
#include "edge/engine.h"
#include "model/forward.h"
#include "model/model.h"

namespace edge {
namespace {

using namespace std::chrono_literals;

const std::string& model_path() {
  static const std::string path = [] {
    auto dir = std::filesystem::temp_directory_path() / ("edge_engine_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string p = (dir / "m.gguf").string();
    RandomModelOptions o;
    o.n_layer = 2;
    o.n_embd = 64;
    o.n_vocab = 512;
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
  return std::move(m).value();
}

std::unique_ptr<Engine> make_engine(const Model& m, EngineOptions o = {}) {
  o.max_model_len = o.max_model_len == 4096 ? 256 : o.max_model_len;
  auto e = Engine::create(m, o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return std::move(e).value();
}

struct Result {
  std::vector<int32_t> tokens;
  std::string text;
  ChunkKind end = ChunkKind::kError;
  std::string finish;
  int64_t cached = 0, completion = 0;
};

Result drain(Engine& e, const RequestHandle& h) {
  Result r;
  for (;;) {
    auto c = e.next(h, 20s);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    if (!c.ok()) return r;
    r.tokens.insert(r.tokens.end(), c->tokens.begin(), c->tokens.end());
    r.text += c->text;
    if (c->kind != ChunkKind::kTokens) {
      r.end = c->kind;
      r.finish = c->finish_reason;
      r.cached = c->cached_prompt_tokens;
      r.completion = c->completion_tokens;
      return r;
    }
  }
}

std::vector<int32_t> prompt_of(int n, int seed) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(3 + (seed * 131 + i * 17) % 500);
  return p;
}

GenerateRequest request(std::vector<int32_t> prompt, int max_tokens, uint64_t seed = 0) {
  GenerateRequest g;
  g.prompt = std::move(prompt);
  g.params.max_tokens = max_tokens;
  g.params.ignore_eos = true;
  if (seed != 0) {
    g.params.sampling = SamplingParams{};
    g.params.sampling.temperature = 0.9f;
    g.params.sampling.seed = seed;
  }
  return g;
}

TEST(Engine, GreedyEqualsTheSingleSequenceForwardPass) {
  auto m = load_model();
  auto e = make_engine(*m);
  const auto prompt = prompt_of(21, 1);
  auto s = e->open_session();
  ASSERT_TRUE(s.ok());
  auto h = e->submit(*s, request(prompt, 12));
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  const Result got = drain(*e, *h);
  EXPECT_EQ(got.end, ChunkKind::kDone);
  EXPECT_EQ(got.finish, "length");
  EXPECT_EQ(got.completion, 12);
  InferenceOptions io;
  io.kv_types = KvType::kF16;
  auto st = InferenceState::create(*m, 64, io);
  ASSERT_TRUE(st.ok());
  std::vector<int32_t> want;
  auto logits = st->forward(prompt);
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(logits.ok());
    const int32_t t = argmax(*logits);
    want.push_back(t);
    logits = st->forward(std::vector<int32_t>{t});
  }
  EXPECT_EQ(got.tokens, want);
  EXPECT_EQ(e->stats().kv_blocks_used, 0);
}

TEST(Engine, ConcurrentSeededRequestsEqualTheSameRequestsAlone) {
  auto m = load_model();
  auto e = make_engine(*m);
  auto s = e->open_session();
  std::vector<Result> alone;
  for (int i = 0; i < 8; ++i) {
    auto h = e->submit(*s, request(prompt_of(5 + 3 * i, i), 10 + i, 100 + i));
    ASSERT_TRUE(h.ok());
    alone.push_back(drain(*e, *h));
  }
  std::vector<RequestHandle> hs;
  for (int i = 0; i < 8; ++i) {
    auto h = e->submit(*s, request(prompt_of(5 + 3 * i, i), 10 + i, 100 + i));
    ASSERT_TRUE(h.ok());
    hs.push_back(*h);
  }
  std::vector<Result> together(8);
  std::vector<std::thread> readers;
  for (int i = 0; i < 8; ++i) readers.emplace_back([&, i] { together[i] = drain(*e, hs[i]); });
  for (auto& t : readers) t.join();
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(together[i].tokens, alone[i].tokens) << "request " << i;
    EXPECT_EQ(together[i].tokens.size(), static_cast<size_t>(10 + i));
  }
  EXPECT_EQ(e->stats().kv_blocks_used, 0);
}

// Decode-first planning learns the step costs and caps the prompt tokens that run beside
// decoding sequences (an ITL target < 0 turns the cap off); tokens are the same either way.
TEST(Engine, PromptsBesideDecodesAreCappedFromMeasuredStepCosts) {
  auto m = load_model();
  std::vector<std::vector<int32_t>> got;
  for (double target : {0.0, -1.0}) {
    EngineOptions o;
    o.itl_target_ms = target;
    o.max_batched_tokens = 64;
    auto e = make_engine(*m, o);
    auto s = e->open_session();
    auto first = e->submit(*s, request(prompt_of(8, 1), 60));
    ASSERT_TRUE(first.ok());
    // Wait until it decodes alone for a while (decode-only steps measured).
    ASSERT_TRUE(e->wait_for_stats([](const EngineStats& st) { return st.decode_step_ms > 0; }, 20s));
    auto second = e->submit(*s, request(prompt_of(200, 2), 8));
    ASSERT_TRUE(second.ok());
    const Result b = drain(*e, *second);
    const Result a = drain(*e, *first);
    EXPECT_EQ(a.tokens.size(), 60u);
    EXPECT_EQ(b.tokens.size(), 8u);
    const EngineStats st = e->stats();
    EXPECT_GT(st.decode_step_ms, 0);
    EXPECT_GT(st.prefill_token_ms, 0);
    if (target == 0)
      EXPECT_GE(st.prefill_cap, 1) << "a cap from the measured costs";
    else
      EXPECT_EQ(st.prefill_cap, 0) << "itl_target_ms < 0: no cap";
    got.push_back(a.tokens);
    got.push_back(b.tokens);
  }
  EXPECT_EQ(got[0], got[2]);
  EXPECT_EQ(got[1], got[3]);
}

TEST(Engine, CancelEndsTheStreamAndFreesTheKv) {
  auto m = load_model();
  auto e = make_engine(*m);
  auto s = e->open_session();
  auto keep = e->submit(*s, request(prompt_of(9, 2), 30));
  auto drop = e->submit(*s, request(prompt_of(9, 3), 200));
  ASSERT_TRUE(keep.ok() && drop.ok());
  auto first = e->next(*drop, 20s);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(e->cancel(*drop).ok());
  const Result rest = drain(*e, *drop);
  EXPECT_EQ(rest.end, ChunkKind::kCancelled);
  const Result kept = drain(*e, *keep);
  EXPECT_EQ(kept.end, ChunkKind::kDone);
  EXPECT_EQ(kept.tokens.size(), 30u);
  EXPECT_EQ(e->stats().kv_blocks_used, 0);
  EXPECT_EQ(e->stats().requests_cancelled, 1u);
  // The retired handle is refused.
  EXPECT_FALSE(e->next(*drop, 1ms).ok());
  EXPECT_FALSE(e->cancel(*drop).ok());
}

TEST(Engine, SlowConsumerIsPausedAndLosesNothing) {
  auto m = load_model();
  EngineOptions o;
  o.stream_queue_limit = 4;
  auto e = make_engine(*m, o);
  auto s = e->open_session();
  auto slow = e->submit(*s, request(prompt_of(7, 4), 40));
  auto fast = e->submit(*s, request(prompt_of(7, 5), 40));
  ASSERT_TRUE(slow.ok() && fast.ok());
  const Result f = drain(*e, *fast);  // finishes while the slow one sits at its bound
  EXPECT_EQ(f.tokens.size(), 40u);
  // The slow stream fills to its bound and is paused: wait for that state, not a guess.
  ASSERT_TRUE(e->wait_for_stats([](const EngineStats& st) { return st.paused == 1; }, 20s));
  EXPECT_LE(e->stats().stream_high_water, 5);  // limit + the terminal chunk at most
  const Result r = drain(*e, *slow);
  EXPECT_EQ(r.tokens.size(), 40u);
  // Same tokens as the request run alone.
  auto again = e->submit(*s, request(prompt_of(7, 4), 40));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(drain(*e, *again).tokens, r.tokens);
}

TEST(Engine, StaleForeignAndClosedHandlesAreRefused) {
  auto m = load_model();
  auto e1 = make_engine(*m);
  auto e2 = make_engine(*m);
  auto s = e1->open_session();
  auto h = e1->submit(*s, request(prompt_of(4, 6), 3));
  ASSERT_TRUE(h.ok());
  EXPECT_FALSE(e2->next(*h, 1ms).ok());
  EXPECT_FALSE(e2->cancel(*h).ok());
  RequestHandle forged = *h;
  forged.request += 1000;
  EXPECT_FALSE(e1->next(forged, 1ms).ok());
  EXPECT_FALSE(e1->submit(*s + 77, request(prompt_of(4, 6), 3)).ok());
  ASSERT_TRUE(e1->close_session(*s).ok());
  EXPECT_FALSE(e1->next(*h, 1ms).ok());
  EXPECT_FALSE(e1->close_session(*s).ok());
  // Closing frees the request's KV (at once, or when its step ends).
  EXPECT_TRUE(e1->wait_for_stats([](const EngineStats& st) { return st.kv_blocks_used == 0; }, 20s));
}

TEST(Engine, BadRequestsAreRefusedWithReasons) {
  auto m = load_model();
  auto e = make_engine(*m);
  auto s = e->open_session();
  EXPECT_FALSE(e->submit(*s, request({}, 3)).ok());
  EXPECT_FALSE(e->submit(*s, request(prompt_of(300, 1), 3)).ok());  // over the 256 context
  auto over = e->submit(*s, request(prompt_of(200, 1), 100));
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("256"), std::string::npos) << over.status().message();
  EXPECT_FALSE(e->submit(*s, request({1, 99999}, 3)).ok());
  auto bad = request(prompt_of(3, 1), 3);
  bad.params.sampling.temperature = -1;
  EXPECT_FALSE(e->submit(*s, bad).ok());
}

TEST(Engine, RepeatedPromptReusesCachedBlocks) {
  auto m = load_model();
  auto e = make_engine(*m);
  auto s = e->open_session();
  const auto prompt = prompt_of(50, 9);
  auto a = e->submit(*s, request(prompt, 5));
  const Result ra = drain(*e, *a);
  auto b = e->submit(*s, request(prompt, 5));
  const Result rb = drain(*e, *b);
  EXPECT_EQ(ra.cached, 0);
  EXPECT_EQ(rb.cached, 48);  // three whole blocks of 16; the last token is recomputed
  EXPECT_EQ(ra.tokens, rb.tokens);
  EXPECT_EQ(e->stats().prefix_cache_hit_tokens, 48u);
}

// A step whose forward pass fails ends its requests with the error, and the blocks it was
// to write go back to the pool without prefix hashes: the same prompt later must be
// computed, not served from KV that was never written.
TEST(Engine, FailedStepPublishesNoPrefixHashes) {
  auto m = load_model();
  std::atomic<int> faults{1};
  EngineOptions o;
  o.step_fault = [&faults] {
    return faults.fetch_sub(1) > 0 ? Status::internal("injected forward failure") : Status();
  };
  auto e = make_engine(*m, o);
  auto s = e->open_session();
  const auto prompt = prompt_of(50, 21);
  auto failed = e->submit(*s, request(prompt, 5));
  ASSERT_TRUE(failed.ok());
  const Result rf = drain(*e, *failed);
  EXPECT_EQ(rf.end, ChunkKind::kError);
  EXPECT_TRUE(rf.tokens.empty());
  auto again = e->submit(*s, request(prompt, 5));
  const Result ra = drain(*e, *again);
  EXPECT_EQ(ra.end, ChunkKind::kDone);
  EXPECT_EQ(ra.cached, 0) << "prefix served from blocks the failed step never wrote";
  auto fresh = make_engine(*m);
  auto fs = fresh->open_session();
  auto ref = fresh->submit(*fs, request(prompt, 5));
  EXPECT_EQ(drain(*fresh, *ref).tokens, ra.tokens);
}

// Two engines over one model run at the same time: each steps on its own threads (the
// second gets a pool of its own), and each produces what it produces alone.
TEST(Engine, TwoEnginesOverOneModelRunConcurrently) {
  auto m = load_model();
  auto e1 = make_engine(*m);
  auto e2 = make_engine(*m);
  std::vector<std::vector<int32_t>> alone(2), together(2);
  for (int i = 0; i < 2; ++i) {
    auto s = e1->open_session();
    auto h = e1->submit(*s, request(prompt_of(20, 30 + i), 40));
    alone[i] = drain(*e1, *h).tokens;
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      Engine& e = i == 0 ? *e1 : *e2;
      auto s = e.open_session();
      for (int rep = 0; rep < 3; ++rep) {
        auto h = e.submit(*s, request(prompt_of(20, 30 + i), 40));
        together[i] = drain(e, *h).tokens;
        if (together[i] != alone[i]) return;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(together, alone);
  // The model's pool is free again once the engine holding it is gone.
  e1.reset();
  e2.reset();
  EXPECT_TRUE(m->claim_pool());
  m->release_pool();
}

TEST(Engine, StopStringCutsTheText) {
  auto m = load_model();
  ASSERT_NE(m->tokenizer(), nullptr);
  auto e = make_engine(*m);
  auto s = e->open_session();
  const auto prompt = prompt_of(6, 11);
  auto h = e->submit(*s, request(prompt, 20));
  const Result full = drain(*e, *h);
  ASSERT_GT(full.text.size(), 6u);
  const std::string stop = full.text.substr(full.text.size() / 2, 3);
  auto req = request(prompt, 20);
  req.params.stop = {stop};
  auto h2 = e->submit(*s, req);
  const Result cut = drain(*e, *h2);
  EXPECT_EQ(cut.finish, "stop");
  EXPECT_EQ(cut.text, full.text.substr(0, full.text.find(stop)));
}

TEST(Engine, CreateFromPathRunsTheMemoryPlanFirst) {
  EngineOptions o;
  o.model_path = model_path();
  o.max_model_len = 128;
  o.n_threads = 2;
  auto ok = Engine::create(o);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  auto s = (*ok)->open_session();
  auto h = (*ok)->submit(*s, request(prompt_of(5, 1), 4));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(drain(**ok, *h).tokens.size(), 4u);
  o.memory_limit_bytes = 64 * 1024;  // far below the weights alone
  auto refused = Engine::create(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status().to_string();
  o.memory_limit_bytes = 0;
  o.kv_type = "f12";
  EXPECT_FALSE(Engine::create(o).ok());
}

}  // namespace
}  // namespace edge
