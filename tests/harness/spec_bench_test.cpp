// The speculative bench (harness/spec_bench.h) on a small random model: the oracle drafter's
// acceptance is what it is told (all drafts taken at 1, none at 0, about alpha in between),
// every record carries both speeds, their ratio and the draft statistics, and an acceptance
// outside [0, 1] is refused by name.
#include "harness/spec_bench.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "convert/random_model.h"
#include "model/model.h"

namespace edge {
namespace {

std::unique_ptr<Model> small_model() {
  RandomModelOptions o;
  o.n_vocab = 512;
  const std::string path = testing::TempDir() + "/spec_bench" + std::to_string(getpid()) + ".gguf";
  EXPECT_TRUE(write_random_model(o, path).ok());
  auto m = Model::load(path);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(OracleDrafter, ReplaysTheFutureWithWrongTokensAtTheAskedRate) {
  std::vector<int32_t> future(4000);
  for (size_t i = 0; i < future.size(); ++i) future[i] = static_cast<int32_t>(i % 97);
  const std::vector<int32_t> history = {7, 8, 9};  // the prompt: drafts start at future[0]
  OracleDrafter all(3, future, 1.0, 100, 1);
  EXPECT_EQ(all.draft(history, 4), (std::vector<int32_t>{0, 1, 2, 3}));
  OracleDrafter none(3, future, 0.0, 100, 1);
  for (int32_t t : none.draft(history, 4)) EXPECT_NE(t, 0);
  OracleDrafter some(3, future, 0.7, 100, 1);
  const std::vector<int32_t> d = some.draft(history, 4000);
  ASSERT_EQ(d.size(), future.size());
  int right = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    EXPECT_GE(d[i], 0);
    EXPECT_LT(d[i], 100);
    right += d[i] == future[i];
  }
  EXPECT_NEAR(right / 4000.0, 0.7, 0.035);  // 5 standard deviations
  // Past the recorded future there is nothing to draft.
  EXPECT_TRUE(all.draft(std::vector<int32_t>(3 + future.size(), 0), 4).empty());
}

TEST(SpecBench, RecordsCarryBothSpeedsTheRatioAndTheDraftStatistics) {
  auto m = small_model();
  ASSERT_TRUE(m);
  SpecBenchOptions o;
  o.acceptance = {1.0, 0.0};
  o.n_gen = {48};
  o.n_prompt = 8;
  o.reps = 2;
  auto records = run_spec_bench(*m, o);
  ASSERT_TRUE(records.ok()) << records.status().to_string();
  ASSERT_EQ(records->size(), 2u);
  for (const auto& r : *records) {
    EXPECT_EQ(r["plain_samples_ts"].size(), 2u);
    EXPECT_EQ(r["spec_samples_ts"].size(), 2u);
    EXPECT_GT(r["plain_ts"].get<double>(), 0.0);
    EXPECT_GT(r["avg_ts"].get<double>(), 0.0);
    EXPECT_NEAR(r["speedup_of_medians"].get<double>(),
                r["avg_ts"].get<double>() / r["plain_ts"].get<double>(), 1e-9);
    const auto& s = r["speedup_samples"];  // two reps: the median is their mean
    EXPECT_NEAR(r["speedup"].get<double>(), 0.5 * (s[0].get<double>() + s[1].get<double>()), 1e-9);
    EXPECT_TRUE(r.contains("provenance"));
  }
  const auto& all = (*records)[0]["speculative"];
  EXPECT_GT(all["drafted"].get<int64_t>(), 0);
  EXPECT_EQ(all["accepted"], all["drafted"]);
  EXPECT_GT(all["tokens_per_pass"].get<double>(), 1.0);  // how many: the measured step costs
  const auto& none = (*records)[1]["speculative"];
  EXPECT_EQ(none["accepted"].get<int64_t>(), 0);
  EXPECT_GT(none["drafted"].get<int64_t>(), 0);  // turning itself off is DraftController's test
  EXPECT_NE(spec_bench_markdown(*records).find("tg48 spec a1.00"), std::string::npos);
}

TEST(SpecBench, AnAcceptanceOutsideZeroToOneIsRefused) {
  auto m = small_model();
  ASSERT_TRUE(m);
  SpecBenchOptions o;
  o.acceptance = {1.5};
  auto r = run_spec_bench(*m, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("1.5"), std::string::npos) << r.status().to_string();
}

}  // namespace
}  // namespace edge
