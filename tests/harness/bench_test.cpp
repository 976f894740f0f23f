// Decode's bytes per token for the roofline: counted from the model's shapes, by hand here
// for a small llama (F32: 4 bytes per weight) and a gemma3 with sliding layers; and the
// bench's tg records carry the roofline fields, measured in the same run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "convert/random_model.h"
#include "harness/bench.h"
#include "model/model.h"

namespace edge {
namespace {

std::string write_model(const RandomModelOptions& o, const std::string& name) {
  const std::string path = testing::TempDir() + "/" + name + std::to_string(getpid()) + ".gguf";
  EXPECT_TRUE(write_random_model(o, path).ok());
  return path;
}

TEST(DecodeBytes, CountsEveryMatrixTheHeadOneEmbeddingRowAndTheVisitedKv) {
  RandomModelOptions o;  // llama: 2 layers, dim 64, 4 heads (head_dim 16), 2 kv heads, ff 128
  o.n_vocab = 512;
  auto m = Model::load(write_model(o, "decode_bytes_llama"));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const DecodeBytes d = decode_bytes(**m, KvType::kF32);
  const uint64_t attn = 64 * 64 + 64 * 32 + 64 * 32 + 64 * 64;  // wq wk wv wo
  const uint64_t ffn = 3 * 64 * 128;                             // gate up down
  const uint64_t per_layer = (attn + ffn) * 4 + 2 * 64 * 4;      // + attn/ffn norms
  const uint64_t head = 512 * 64 * 4, embd_row = 64 * 4;
  EXPECT_EQ(d.weights, 2 * per_layer + head + embd_row);
  EXPECT_EQ(d.kv_per_position, 2u * 2 * (2 * 16 * 4));  // layers x (K + V) x row
  EXPECT_TRUE(d.sliding_windows.empty());
  EXPECT_EQ(d.at(9) - d.at(0), 9 * d.kv_per_position);
}

TEST(DecodeBytes, SlidingLayersReadAtMostTheirWindow) {
  RandomModelOptions o;
  o.arch = "gemma3";
  o.n_layer = 6;  // 5 sliding + 1 global
  o.sliding_window = 8;
  auto m = Model::load(write_model(o, "decode_bytes_gemma3"));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const DecodeBytes d = decode_bytes(**m, KvType::kF16);
  ASSERT_EQ(d.sliding_windows.size(), 5u);
  // Past the window only the global layer's KV grows.
  EXPECT_EQ(d.at(100) - d.at(99), d.kv_per_position);
  EXPECT_EQ(d.at(3) - d.at(2), d.kv_per_position + 5 * d.kv_sliding_window_bytes);
}

TEST(Bench, DecodeRecordsCarryTheRooflineMeasuredInTheSameRun) {
  RandomModelOptions o;
  auto m = Model::load(write_model(o, "bench_roofline"));
  ASSERT_TRUE(m.ok());
  BenchOptions b;
  b.n_prompt = {8};
  b.n_gen = {4};
  b.reps = 1;
  b.roofline_bytes = 64 << 20;  // small: the test checks the fields, not the machine
  b.roofline_passes = 1;
  auto r = run_bench(**m, b);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_FALSE((*r)[0].contains("roofline")) << "prefill is not a bandwidth test";
  const auto& roof = (*r)[1]["roofline"];
  EXPECT_GT(roof["ceiling_gbps"].get<double>(), 0);
  EXPECT_GT(roof["effective_gbps"].get<double>(), 0);
  EXPECT_NEAR(roof["fraction_of_ceiling"].get<double>(),
              roof["effective_gbps"].get<double>() / roof["ceiling_gbps"].get<double>(), 1e-9);
  EXPECT_GT(roof["bytes_per_token"].get<uint64_t>(), roof["weight_bytes_per_token"].get<uint64_t>());
  b.roofline_bytes = 0;
  auto none = run_bench(**m, b);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE((*none)[1].contains("roofline"));
}

// -d: each test runs after D prefilled tokens; the record names its depth and a decode at
// depth reads that many more KV rows per token than one from an empty context.
TEST(Bench, DepthRunsEachTestAfterThePrefilledContext) {
  RandomModelOptions o;
  auto m = Model::load(write_model(o, "bench_depth"));
  ASSERT_TRUE(m.ok());
  BenchOptions b;
  b.n_prompt = {8};
  b.n_gen = {4};
  b.n_depth = {0, 40};
  b.reps = 1;
  b.roofline_bytes = 16 << 20;
  b.roofline_passes = 1;
  auto r = run_bench(**m, b);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 4u);  // pp8, pp8 @ d40, tg4, tg4 @ d40
  EXPECT_EQ((*r)[1]["n_depth"].get<int>(), 40);
  EXPECT_EQ((*r)[2]["n_depth"].get<int>(), 0);
  EXPECT_EQ((*r)[3]["n_depth"].get<int>(), 40);
  EXPECT_GT((*r)[3]["roofline"]["bytes_per_token"].get<uint64_t>(),
            (*r)[2]["roofline"]["bytes_per_token"].get<uint64_t>());
  EXPECT_NE(bench_markdown(*r).find("tg4 @ d40"), std::string::npos);
  b.n_depth = {-1};
  EXPECT_FALSE(run_bench(**m, b).ok());
}

}  // namespace
}  // namespace edge
