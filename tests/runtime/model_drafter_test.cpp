// The draft-model drafter (runtime/model_drafter.h): a small model sharing the tokenizer
// drafts greedily; its cache follows the history through accepted and rejected drafts (the
// drafts equal a fresh drafter's), skips what it missed over a long plain stretch but the last
// few tokens, and a draft model that could not pay even if every draft were taken is never
// probed. Verified with real model drafts, speculative decoding gives the plain greedy tokens,
// alone and in the engine; the memory plan counts the draft model; a draft model with another
// tokenizer is refused with the token that differs.
#include "runtime/model_drafter.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "convert/random_model.h"
#include "edge/engine.h"
#include "model/model_footprint.h"
#include "model/model_test_util.h"
#include "runtime/memory_plan.h"

namespace edge {
namespace {

using namespace std::chrono_literals;

// Random models in one temporary folder, removed at the end of the test program.
class Files {
 public:
  Files()
      : dir_(std::filesystem::temp_directory_path() /
             ("edge_model_drafter_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
  }
  ~Files() { std::filesystem::remove_all(dir_); }
  std::string write(const RandomModelOptions& o, const std::string& name) {
    const std::string p = (dir_ / (name + ".gguf")).string();
    const Status s = write_random_model(o, p);
    EXPECT_TRUE(s.ok()) << s.to_string();
    return p;
  }

 private:
  std::filesystem::path dir_;
};

Files& files() {
  static Files f;
  return f;
}

// A 64-wide llama of n_layer layers whose layers from quiet_from on barely speak (scale):
// its first quiet_from layers alone (the same options, fewer layers) draft for it well.
RandomModelOptions quiet_llama(int32_t n_layer, int32_t quiet_from, float scale) {
  RandomModelOptions o;
  o.arch = "llama";
  o.n_layer = n_layer, o.n_embd = 64, o.n_head = 4, o.n_head_kv = 2, o.n_vocab = 512;
  o.ctx = 512;
  o.quiet_from = quiet_from, o.quiet_scale = scale;
  return o;
}

using testing::load_or_die;

struct Pair {
  std::unique_ptr<Model> target, draft;
  std::string target_path, draft_path;
};

// Target: 6 layers, quiet from the second; draft: its first layer.
Pair quiet_pair() {
  Pair p;
  p.target_path = files().write(quiet_llama(6, 1, 0.02f), "target");
  RandomModelOptions d = quiet_llama(1, 1, 0.02f);
  p.draft_path = files().write(d, "draft");
  p.target = load_or_die(p.target_path);
  p.draft = load_or_die(p.draft_path);
  return p;
}

std::vector<int32_t> plain_greedy(const Model& m, std::vector<int32_t> prompt, int n) {
  auto st = InferenceState::create(m, m.config().max_ctx);
  EXPECT_TRUE(st.ok());
  Sampler s(SamplingParams::greedy());
  auto logits = st->forward(prompt);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    const int32_t id = s.sample(*logits, prompt);
    prompt.push_back(id), out.push_back(id);
    if (i + 1 < n) logits = st->forward(std::span<const int32_t>(&id, 1));
  }
  return out;
}

TEST(ModelDrafter, DraftsTheDraftModelsGreedyContinuation) {
  Pair p = quiet_pair();
  ASSERT_TRUE(p.target && p.draft);
  ASSERT_TRUE(check_draft_model(*p.target, *p.draft).ok());
  const std::vector<int32_t> prompt = {1, 17, 99, 203, 7};
  ModelDrafter d(*p.draft, *p.target, 256, KvType::kF32);
  EXPECT_EQ(d.draft(prompt, 5), plain_greedy(*p.draft, prompt, 5));
  // The history moves on by two of the drafts and another token: the cache keeps what
  // still agrees and the next drafts are a fresh drafter's.
  std::vector<int32_t> h = prompt;
  const std::vector<int32_t> first = d.draft(h, 4);
  h.insert(h.end(), first.begin(), first.begin() + 2);
  h.push_back((first[2] + 1) % 512);  // the target disagreed at the third
  ModelDrafter fresh(*p.draft, *p.target, 256, KvType::kF32);
  EXPECT_EQ(d.draft(h, 4), fresh.draft(h, 4));
  EXPECT_GT(d.ms_per_token(10.0), 0.0);
}

TEST(ModelDrafter, SkipsALongPlainStretchButItsLastTokens) {
  Pair p = quiet_pair();
  ASSERT_TRUE(p.target && p.draft);
  std::vector<int32_t> h = {1, 17, 99, 203, 7};
  ModelDrafter d(*p.draft, *p.target, 256, KvType::kF32);
  ASSERT_EQ(d.draft(h, 2).size(), 2u);
  EXPECT_EQ(d.cache_positions(), 6);  // the prompt and the first draft
  for (int i = 0; i < 60; ++i) h.push_back((i * 37 + 11) % 512);
  const std::vector<int32_t> after = d.draft(h, 3);
  ASSERT_EQ(after.size(), 3u);
  for (int32_t id : after) EXPECT_TRUE(id >= 0 && id < 512);
  // The prompt, then the last kGapTail tokens of the stretch and two drafts: not all 60.
  EXPECT_EQ(d.cache_positions(), 5 + ModelDrafter::kGapTail + 2);
}

// With drafts from the draft model verified in earnest (the draft cost reported as nothing,
// so that the controller drafts whatever this machine's timings), decoding gives the plain
// greedy tokens, and the quiet pair agrees often.
class FreeDrafter final : public Drafter {
 public:
  explicit FreeDrafter(Drafter& d) : d_(d) {}
  std::vector<int32_t> draft(std::span<const int32_t> h, int32_t n) override {
    return d_.draft(h, n);
  }

 private:
  Drafter& d_;
};

TEST(ModelDrafter, VerifiedDraftsGiveThePlainGreedyTokens) {
  Pair p = quiet_pair();
  ASSERT_TRUE(p.target && p.draft);
  const std::vector<int32_t> prompt = {1, 5, 9, 300, 42, 42, 8};
  const std::vector<int32_t> want = plain_greedy(*p.target, prompt, 100);
  auto st = InferenceState::create(*p.target, 256);
  ASSERT_TRUE(st.ok());
  auto logits = st->forward(prompt);
  ASSERT_TRUE(logits.ok());
  ModelDrafter model_drafter(*p.draft, *p.target, 256, KvType::kF32);
  FreeDrafter d(model_drafter);
  Sampler s(SamplingParams::greedy());
  DraftController c(4);
  StepCostTable costs;
  SpeculativeStats stats;
  std::vector<int32_t> got;
  const Status done = decode_speculative(
      *st, *logits, prompt, 100, s, d, c, costs,
      [&](int32_t id) {
        got.push_back(id);
        return true;
      },
      &stats);
  ASSERT_TRUE(done.ok()) << done.to_string();
  EXPECT_EQ(got, want);
  EXPECT_GT(stats.drafted, 0);
}

// How often the draft model's next token is the target's along the target's own greedy
// continuation: the quiet scale sets it (the benchmark's draft-model pairs rely on that).
double agreement(float scale) {
  const std::string tag = std::to_string(static_cast<int>(scale * 1000));
  auto target = load_or_die(files().write(quiet_llama(6, 1, scale), "agree_target_" + tag));
  auto draft = load_or_die(files().write(quiet_llama(1, 1, scale), "agree_draft_" + tag));
  if (!target || !draft) return -1;
  std::vector<int32_t> h = {1, 5, 9, 300, 42, 42, 8};
  const std::vector<int32_t> want = plain_greedy(*target, h, 60);
  ModelDrafter d(*draft, *target, 256, KvType::kF32);
  int same = 0;
  for (int32_t next : want) {
    const std::vector<int32_t> guess = d.draft(h, 1);
    same += !guess.empty() && guess[0] == next;
    h.push_back(next);
  }
  return same / 60.0;
}

TEST(ModelDrafter, TheQuietScaleSetsHowOftenTheDraftAgrees) {
  const double close = agreement(0.02f), loud = agreement(1.0f);
  std::printf("[ quiet pair ] agreement at scale 0.02: %.2f, at 1: %.2f\n", close, loud);
  EXPECT_GT(close, 0.6);
  EXPECT_LT(loud, close);
}

// A drafter as slow as the target: even taking every draft, a verify step plus the drafting
// costs more than the tokens it gives; after the first refusal it is never probed again.
TEST(DraftController, ADraftModelThatCannotPayIsNotProbed) {
  StepCostTable costs;
  costs.record(1, 10.0), costs.record(2, 11.0), costs.record(3, 12.0), costs.record(5, 14.0);
  DraftController c(4, 5);
  int drafted_steps = 0;
  for (int i = 0; i < 400; ++i) {
    const int32_t k = c.next_length(costs, 0, /*draft_ms=*/10.0);
    if (k > 0) c.on_verify(k, k), ++drafted_steps;  // every draft taken
  }
  EXPECT_EQ(drafted_steps, 0);
  // A draft model at a tenth of the target's cost that is always right drafts every step.
  DraftController cheap(4, 5);
  int cheap_steps = 0;
  for (int i = 0; i < 50; ++i) {
    const int32_t k = cheap.next_length(costs, 0, 1.0);
    if (k > 0) cheap.on_verify(k, k), ++cheap_steps;
  }
  EXPECT_GE(cheap_steps, 45);
}

TEST(ModelDrafter, AnotherTokenizerIsRefusedNamingTheToken) {
  Pair p = quiet_pair();
  ASSERT_TRUE(p.target);
  RandomModelOptions other = quiet_llama(1, -1, 1.0f);
  other.seed = 7;  // another synthetic vocabulary
  auto o = load_or_die(files().write(other, "other_seed"));
  ASSERT_TRUE(o);
  const Status s = check_draft_model(*p.target, *o);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.to_string().find("tokenizer differs"), std::string::npos) << s.to_string();
  RandomModelOptions wide = quiet_llama(1, -1, 1.0f);
  wide.n_vocab = 1024;
  auto w = load_or_die(files().write(wide, "wide_vocab"));
  ASSERT_TRUE(w);
  const Status sw = check_draft_model(*p.target, *w);
  EXPECT_FALSE(sw.ok());
  EXPECT_NE(sw.to_string().find("1024"), std::string::npos) << sw.to_string();
}

TEST(ModelDrafter, TheMemoryPlanCountsTheDraftModel) {
  Pair p = quiet_pair();
  auto target = read_model_footprint(p.target_path);
  auto draft = read_model_footprint(p.draft_path);
  ASSERT_TRUE(target.ok() && draft.ok());
  PlanOptions o;
  o.ctx = 256, o.max_seqs = 3;
  MemoryLimit unlimited;
  unlimited.bytes = int64_t{1} << 50;
  auto without = make_memory_plan(*target, o, unlimited);
  o.draft = &*draft;
  auto with = make_memory_plan(*target, o, unlimited);
  ASSERT_TRUE(without.ok() && with.ok());
  const DraftModelBytes d = plan_draft_model_bytes(*draft, o.kv_types, 256, 3);
  EXPECT_GT(d.kv, 0);
  EXPECT_EQ(with->of(MemCategory::kKv) - without->of(MemCategory::kKv), d.kv);
  EXPECT_EQ(with->of(MemCategory::kScratch) - without->of(MemCategory::kScratch), d.scratch);
  EXPECT_EQ(with->of(MemCategory::kWeightsMapped) + with->of(MemCategory::kWeights) -
                without->of(MemCategory::kWeightsMapped) - without->of(MemCategory::kWeights),
            d.weights_anon + d.weights_mapped);
  // The KV of one draft sequence is what its cache holds once it has drafted.
  ModelDrafter md(*p.draft, *p.target, 256, KvType::kF16);
  ASSERT_FALSE(md.draft(std::vector<int32_t>{1, 2, 3}, 2).empty());
  EXPECT_EQ(static_cast<int64_t>(md.cache_bytes()), d.kv / 3);
}

// The engine with a draft model: every request of a batch gets the plain greedy tokens,
// drafts were verified, and a missing or mismatched draft model is refused at creation.
TEST(ModelDrafter, EngineWithADraftModelGivesThePlainTokens) {
  Pair p = quiet_pair();
  ASSERT_TRUE(p.target);
  EngineOptions o;
  o.model_path = p.target_path;
  o.max_model_len = 256;
  o.kv_type = "f32";
  o.n_threads = 2;
  std::vector<std::vector<int32_t>> prompts = {{1, 5, 9, 300}, {1, 77, 78, 79, 80, 81}};
  auto run = [&](const EngineOptions& eo) {
    auto e = Engine::create(eo);
    EXPECT_TRUE(e.ok()) << e.status().to_string();
    std::vector<std::vector<int32_t>> out;
    if (!e.ok()) return std::make_pair(out, EngineStats{});
    auto s = (*e)->open_session();
    std::vector<RequestHandle> hs;
    for (const auto& pr : prompts) {
      GenerateRequest g;
      g.prompt = pr;
      g.params.max_tokens = 40;
      g.params.ignore_eos = true;
      hs.push_back(*(*e)->submit(*s, g));
    }
    for (const RequestHandle& h : hs) {
      std::vector<int32_t> toks;
      for (;;) {
        auto c = (*e)->next(h, 30s);
        EXPECT_TRUE(c.ok());
        if (!c.ok()) break;
        toks.insert(toks.end(), c->tokens.begin(), c->tokens.end());
        if (c->kind != ChunkKind::kTokens) break;
      }
      out.push_back(toks);
    }
    return std::make_pair(out, (*e)->stats());
  };
  const auto plain = run(o);
  EngineOptions spec = o;
  spec.speculative = "draft";
  spec.draft_model = p.draft_path;
  const auto drafted = run(spec);
  EXPECT_EQ(drafted.first, plain.first);
  EXPECT_GT(drafted.second.spec_drafted, 0u);
  // A draft model without speculative "draft", and "draft" without a model, are refused.
  EngineOptions bad = o;
  bad.draft_model = p.draft_path;
  EXPECT_FALSE(Engine::create(bad).ok());
  bad.draft_model.clear();
  bad.speculative = "draft";
  EXPECT_FALSE(Engine::create(bad).ok());
  bad.draft_model = "/nonexistent/draft.gguf";
  auto missing = Engine::create(bad);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().to_string().find("draft model"), std::string::npos)
      << missing.status().to_string();
}

}  // namespace
}  // namespace edge
