// The shared RAM ledger (admission naming stage and bytes, release back to zero, the RSS
// check), credits (a consumer that stops acknowledging stalls its producer at the credit
// limit and nothing is lost), epochs (unique, gap-free under concurrency) and the
// execution plan (artifact hashes verified, memory plan reservations, refusal).
#include "pipeline/graph/ledger.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "convert/random_model.h"
#include "pipeline/graph/artifact.h"
#include "pipeline/graph/credits.h"
#include "pipeline/graph/plan.h"

namespace edge::pipeline {
namespace {

using namespace std::chrono_literals;

TEST(Sha256, KnownDigest) {
  const std::string path =
      std::filesystem::temp_directory_path() / ("edge_sha_" + std::to_string(::getpid()));
  std::ofstream(path, std::ios::binary) << "abc";
  auto h = sha256_file(path);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");  // FIPS 180-2
  std::filesystem::remove(path);
  EXPECT_EQ(sha256_file(path).status().code(), StatusCode::kNotFound);
}

TEST(RamLedger, AdmitsWhatFitsRefusesWhatDoesNotAndReturnsToZero) {
  RamLedger ledger(1000, "--memory-limit");
  auto a = ledger.reserve("encoder", DeviceClass::kNpu, 600);
  ASSERT_TRUE(a.ok());
  auto b = ledger.reserve("lm", DeviceClass::kCpu, 500);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  for (const char* want : {"stage 'lm'", "500 bytes", "400 bytes", "--memory-limit"})
    EXPECT_NE(b.status().message().find(want), std::string::npos)
        << want << ": " << b.status().message();
  auto c = ledger.reserve("lm", DeviceClass::kIgpu, 400);  // an iGPU spends the same DRAM
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(ledger.reserved(), 1000);
  EXPECT_EQ(ledger.available(), 0);
  EXPECT_TRUE(ledger.check_rss(*a, 600).ok());
  const Status over = ledger.check_rss(*c, 401);
  EXPECT_NE(over.message().find("RSS exceeds stage reservation"), std::string::npos)
      << over.message();
  EXPECT_EQ(ledger.to_json()["stages"].size(), 2u);
  EXPECT_TRUE(ledger.release(*a).ok());
  EXPECT_TRUE(ledger.release(*c).ok());
  EXPECT_FALSE(ledger.release(*c).ok());
  EXPECT_EQ(ledger.reserved(), 0);
  EXPECT_TRUE(ledger.reservations().empty());
  EXPECT_FALSE(ledger.reserve("x", DeviceClass::kCpu, -1).ok());
}

TEST(CreditGate, ASilentConsumerStallsItsProducerAtTheLimitAndNothingIsLost) {
  CreditGate gate(4);
  std::atomic<int> sent{0};
  std::vector<int> received;
  std::mutex mu;
  std::thread producer([&] {
    for (int i = 0; i < 20; ++i) {
      while (!gate.acquire(20s)) {
      }
      {
        std::lock_guard<std::mutex> lk(mu);
        received.push_back(i);
      }
      ++sent;
    }
  });
  // The consumer acknowledges nothing yet: the producer stops at exactly 4.
  for (int i = 0; i < 200 && sent.load() < 4; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_FALSE(gate.acquire(0ms));  // no credit for anyone else either
  EXPECT_EQ(sent.load(), 4);
  EXPECT_EQ(gate.in_flight(), 4);
  // Acknowledge one at a time until everything arrived.
  for (int acked = 0; acked < 20; ++acked) {
    while (gate.in_flight() == 0) std::this_thread::yield();
    ASSERT_TRUE(gate.acknowledge(1).ok());
  }
  producer.join();
  EXPECT_EQ(gate.high_water(), 4);
  EXPECT_GE(gate.stalls(), 1u);
  std::vector<int> want(20);
  for (int i = 0; i < 20; ++i) want[i] = i;
  EXPECT_EQ(received, want);
  EXPECT_FALSE(gate.acknowledge(1).ok());  // more than in flight: the peer's error
  gate.close();
  EXPECT_FALSE(gate.acquire(1s));
}

TEST(EpochCounter, EpochsAreUniqueAndGapFreeAcrossThreads) {
  EpochCounter epochs;
  std::vector<std::vector<uint64_t>> got(4);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) got[t].push_back(epochs.next());
    });
  for (auto& t : ts) t.join();
  std::vector<uint64_t> all;
  for (const auto& g : got) all.insert(all.end(), g.begin(), g.end());
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], i + 1);
  EXPECT_EQ(epochs.issued(), 4000u);
}

class PipelinePlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("edge_pipeline_plan_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    RandomModelOptions o;
    o.n_layer = 2, o.n_embd = 64, o.n_vocab = 512;
    ASSERT_TRUE(write_random_model(o, (dir_ / "lm.gguf").string()).ok());
    auto h = sha256_file((dir_ / "lm.gguf").string());
    ASSERT_TRUE(h.ok());
    hash_ = *h;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string file(const std::string& hash, const std::string& reservation) {
    return "pipeline: chat\nstages:\n  - name: lm\n    kind: lm\n    contract: text.generate@1\n"
           "    capacity: 2\n    reservation: " +
           reservation + "\n    artifacts: [{role: model, path: lm.gguf, sha256: " + hash +
           "}]\n"
           "routes: [input.prompt -> lm.prompt, lm.text -> output.text]\n";
  }
  static std::string replace_path(std::string text) {
    return text.replace(text.find("path: lm.gguf"), 13, "path: nope.gguf");
  }
  std::filesystem::path dir_;
  std::string hash_;
};

TEST_F(PipelinePlanTest, ReservesTheMemoryPlanOfTheModelAndVerifiesItsHash) {
  auto p = parse_pipeline(file(hash_, "plan"), dir_.string());
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  MemoryLimit limit;
  limit.bytes = int64_t{8} << 30;
  limit.source = "--memory-limit";
  auto plan = plan_pipeline(*p, limit, {256, 0});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_TRUE(plan->admitted) << plan->refusal;
  ASSERT_EQ(plan->stages.size(), 1u);
  auto fp = read_model_footprint((dir_ / "lm.gguf").string());
  ASSERT_TRUE(fp.ok());
  PlanOptions po;
  po.ctx = 256, po.max_seqs = 2;
  auto mp = make_memory_plan(*fp, po, MemoryLimit{});
  ASSERT_TRUE(mp.ok());
  EXPECT_EQ(plan->stages[0].reserved_bytes, mp->total());
  EXPECT_EQ(plan->stages[0].available_before, limit.bytes);
  const nlohmann::json j = plan->to_json();
  EXPECT_EQ(j["stages"][0]["artifacts"][0]["sha256"], hash_);
  EXPECT_EQ(j["stages"][0]["backend"], "edge-infer in process");

  limit.bytes = 4096;  // far below the model: refused, naming the stage
  plan = plan_pipeline(*p, limit, {256, 0});
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->admitted);
  EXPECT_NE(plan->refusal.find("stage 'lm'"), std::string::npos) << plan->refusal;
}

TEST_F(PipelinePlanTest, AWrongArtifactHashIsRefusedBeforeAnythingStarts) {
  std::string wrong = hash_;
  wrong[0] = wrong[0] == 'a' ? 'b' : 'a';
  auto p = parse_pipeline(file(wrong, "1GiB"), dir_.string());
  ASSERT_TRUE(p.ok());
  auto plan = plan_pipeline(*p, MemoryLimit{}, {});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("differs from the declared artifact hash"),
            std::string::npos)
      << plan.status().message();
  auto missing = parse_pipeline(replace_path(file(hash_, "1GiB")), dir_.string());
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(plan_pipeline(*missing, MemoryLimit{}, {}).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace edge::pipeline
