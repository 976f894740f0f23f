// Media rows spliced into the prompt (MediaEmbedding / EmbeddingSplice): the forward pass
// takes the rows instead of token embeddings, a bidirectional span lets its rows see each
// other (Gemma-3 images) and nothing outside changes that rule, chunking never ends a step
// inside such a span, and the engine's prefix cache keys media positions on the media hash
// (a repeated image is a hit, another image is not).
#include "runtime/media_splice.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "convert/random_model.h"
#include "edge/engine.h"
#include "kernels/api.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/model_footprint.h"
#include "runtime/memory_plan.h"

namespace edge {
namespace {

using namespace std::chrono_literals;

struct TinyModel {
  std::filesystem::path dir;
  std::unique_ptr<Model> model;
  explicit TinyModel(const std::string& arch) {
    dir = std::filesystem::temp_directory_path() /
          ("edge_media_splice_" + arch + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    RandomModelOptions o;
    o.arch = arch;
    o.n_layer = 2;
    o.n_embd = 64;
    o.n_vocab = 512;
    const std::string p = (dir / "m.gguf").string();
    EXPECT_TRUE(write_random_model(o, p).ok());
    LoadOptions lo;
    lo.n_threads = 2;
    auto m = Model::load(p, lo);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    model = std::move(m).value();
  }
  ~TinyModel() { std::filesystem::remove_all(dir); }
};

std::vector<int32_t> prompt_ids(int n) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(3 + (i * 37) % 500);
  return p;
}

// The rows a token prompt would embed (llama: no embedding scale).
std::vector<float> token_rows(const Model& m, std::span<const int32_t> ids) {
  const int64_t d = m.config().n_embd;
  std::vector<float> rows(ids.size() * d);
  for (size_t i = 0; i < ids.size(); ++i)
    embedding_row(m.kernels(), m.weights().token_embd, ids[i], rows.data() + i * d);
  return rows;
}

std::vector<float> run(const Model& m, std::span<const int32_t> ids,
                       std::span<const EmbeddingSplice> sp, int64_t step, bool all = true) {
  InferenceOptions io;
  io.max_step = step;
  auto st = InferenceState::create(m, 128, io);
  EXPECT_TRUE(st.ok());
  auto l = st->forward(ids, all, sp);
  EXPECT_TRUE(l.ok()) << l.status().to_string();
  return l.ok() ? std::vector<float>(l->begin(), l->end()) : std::vector<float>{};
}

float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

TEST(MediaSplice, CausalRowsEqualToTokenEmbeddingsGiveTheTokenLogits) {
  TinyModel t("llama");
  const Model& m = *t.model;
  std::vector<int32_t> ids = prompt_ids(20);
  std::vector<float> rows = token_rows(m, std::span(ids).subspan(5, 8));
  std::vector<int32_t> placeholder = ids;
  for (int i = 5; i < 13; ++i) placeholder[i] = -1;  // ignored where spliced
  EmbeddingSplice sp{5, 8, rows.data(), false};
  EXPECT_EQ(max_diff(run(m, placeholder, {&sp, 1}, 64), run(m, ids, {}, 64)), 0.f);
}

TEST(MediaSplice, BidirectionalRowsSeeLaterRowsOfTheirSpanOnly) {
  TinyModel t("llama");
  const Model& m = *t.model;
  const int64_t nv = m.config().n_vocab;
  std::vector<int32_t> ids = prompt_ids(20);
  std::vector<float> rows = token_rows(m, std::span(ids).subspan(5, 8));
  std::vector<float> changed = rows;
  for (int d = 0; d < 64; ++d) changed[7 * 64 + d] += 0.5f;  // the span's last row
  for (bool bidir : {false, true}) {
    EmbeddingSplice a{5, 8, rows.data(), bidir}, b{5, 8, changed.data(), bidir};
    const std::vector<float> la = run(m, ids, {&a, 1}, 64), lb = run(m, ids, {&b, 1}, 64);
    auto row_diff = [&](int pos) {
      float d = 0;
      for (int64_t v = 0; v < nv; ++v)
        d = std::max(d, std::fabs(la[pos * nv + v] - lb[pos * nv + v]));
      return d;
    };
    EXPECT_EQ(row_diff(4), 0.f) << "before the span";
    if (bidir) {
      EXPECT_GT(row_diff(5), 1e-4f) << "the span's first row sees its last";
    } else {
      EXPECT_EQ(row_diff(5), 0.f) << "causal: the first row does not see the last";
    }
    EXPECT_GT(row_diff(15), 1e-4f) << "after the span";
  }
}

TEST(MediaSplice, ChunksNeverEndInsideABidirectionalSpan) {
  TinyModel t("gemma3");
  const Model& m = *t.model;
  std::vector<int32_t> ids = prompt_ids(30);
  std::vector<float> rows(10 * 64);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = std::sin(0.37f * static_cast<float>(i));
  EmbeddingSplice sp{6, 10, rows.data(), true};
  EXPECT_EQ(splice_chunk_tokens({&sp, 1}, 0, 8), 6);   // cut before the span
  EXPECT_EQ(splice_chunk_tokens({&sp, 1}, 6, 4), 10);  // the whole span at once
  EXPECT_EQ(splice_chunk_tokens({&sp, 1}, 16, 4), 4);  // after it: untouched
  const std::vector<float> one = run(m, ids, {&sp, 1}, 64), chunked = run(m, ids, {&sp, 1}, 12);
  EXPECT_LT(max_diff(one, chunked), 1e-4f);
  InferenceOptions io;
  io.max_step = 8;  // shorter than the span: refused, not silently causal
  auto st = InferenceState::create(m, 128, io);
  ASSERT_TRUE(st.ok());
  EXPECT_FALSE(st->forward(ids, false, {&sp, 1}).ok());
}

struct Result {
  std::vector<int32_t> tokens;
  int64_t cached = 0;
};

Result generate(Engine& e, GenerateRequest req) {
  auto s = e.open_session();
  EXPECT_TRUE(s.ok());
  auto h = e.submit(*s, std::move(req));
  EXPECT_TRUE(h.ok()) << h.status().to_string();
  Result r;
  if (!h.ok()) return r;
  for (;;) {
    auto c = e.next(*h, 10s);
    EXPECT_TRUE(c.ok());
    if (!c.ok()) break;
    r.tokens.insert(r.tokens.end(), c->tokens.begin(), c->tokens.end());
    if (c->kind != ChunkKind::kTokens) {
      r.cached = c->cached_prompt_tokens;
      break;
    }
  }
  return r;
}

GenerateRequest image_request(std::shared_ptr<const std::vector<float>> rows, uint64_t hash) {
  GenerateRequest r;
  r.prompt = prompt_ids(60);  // image at [10, 42): two whole blocks of 16 inside it
  r.params.max_tokens = 4;
  r.media.push_back({10, 32, std::move(rows), hash, true});
  return r;
}

TEST(MediaSplice, EngineCachesARepeatedImageByItsHash) {
  TinyModel t("gemma3");
  EngineOptions o;
  o.max_model_len = 128;
  o.max_batched_tokens = 40;
  auto e = Engine::create(*t.model, o);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  auto img = std::make_shared<std::vector<float>>(32 * 64);
  auto other = std::make_shared<std::vector<float>>(32 * 64);
  for (size_t i = 0; i < img->size(); ++i)
    (*img)[i] = std::sin(0.1f * i), (*other)[i] = std::cos(0.1f * i);
  const Result first = generate(**e, image_request(img, 111));
  const Result again = generate(**e, image_request(img, 111));
  EXPECT_EQ(first.cached, 0);
  EXPECT_EQ(again.cached, 48);  // three whole blocks: text, image, image + text
  EXPECT_EQ(again.tokens, first.tokens);
  const Result changed = generate(**e, image_request(other, 222));
  EXPECT_EQ(changed.cached, 0);  // block 0 holds image positions 10..15 too
  // Validation: rows of the wrong size, a span outside the prompt, overlapping spans.
  auto s = (*e)->open_session();
  GenerateRequest bad = image_request(img, 1);
  bad.media[0].n_tokens = 31;
  EXPECT_FALSE((*e)->submit(*s, bad).ok());
  bad = image_request(img, 1);
  bad.media[0].position = 40;
  EXPECT_FALSE((*e)->submit(*s, bad).ok());
  bad = image_request(img, 1);
  bad.media.push_back(bad.media[0]);
  EXPECT_FALSE((*e)->submit(*s, bad).ok());
}

// The memory plan counts a media encoder beside the model: its weights and activations.
TEST(MediaSplice, MemoryPlanCountsTheEncoder) {
  TinyModel t("llama");
  auto fp = read_model_footprint((t.dir / "m.gguf").string());
  ASSERT_TRUE(fp.ok()) << fp.status().to_string();
  PlanOptions o;
  o.ctx = 256;
  MemoryLimit unlimited;
  unlimited.bytes = int64_t{1} << 40;
  auto base = make_memory_plan(*fp, o, unlimited);
  o.encoder_weights_mapped = 1000, o.encoder_weights_anon = 2000, o.encoder_scratch = 3000;
  auto with = make_memory_plan(*fp, o, unlimited);
  ASSERT_TRUE(base.ok() && with.ok());
  EXPECT_EQ(with->of(MemCategory::kWeightsMapped) - base->of(MemCategory::kWeightsMapped), 1000);
  EXPECT_EQ(with->of(MemCategory::kWeights) - base->of(MemCategory::kWeights), 2000);
  EXPECT_EQ(with->of(MemCategory::kScratch) - base->of(MemCategory::kScratch), 3000);
  EXPECT_EQ(with->total() - base->total(), 6000);
}

TEST(MediaSplice, KeyTokensAreNeverRealIdsAndDependOnTheHash) {
  EXPECT_LT(media_key_token(1, 0), 0);
  EXPECT_NE(media_key_token(1, 0), media_key_token(1, 1));
  EXPECT_NE(media_key_token(1, 0), media_key_token(2, 0));
}

}  // namespace
}  // namespace edge
