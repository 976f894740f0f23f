// Pipeline stages in real worker processes (our own binary, spawned by the pipeline): the
// same tokens as the stage in process; a worker killed with SIGKILL after its first event
// ends that request with an explicit error within 1 s and the next request is served by
// generation 2; retiring the pipeline leaves no worker process behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>

#include "model/random_model.h"
#include "pipeline/artifact.h"
#include "pipeline/executor.h"

namespace edge::pipeline {
namespace {

class PipelineWorker : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("edge_pipeline_worker_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    RandomModelOptions o;
    o.n_layer = 2, o.n_embd = 64, o.n_vocab = 512;
    ASSERT_TRUE(write_random_model(o, (dir_ / "lm.gguf").string()).ok());
    hash_ = *sha256_file((dir_ / "lm.gguf").string());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A declared reservation: these tests are about the process, not the plan's estimate
  // (which a sanitizer's shadow memory exceeds several times over).
  PipelineSpec spec(const std::string& placement) {
    auto p = parse_pipeline(
        "stages:\n  - name: lm\n    kind: lm\n    contract: text.generate@1\n    placement: " +
            placement +
            "\n    reservation: 1GiB\n    artifacts: [{role: model, path: lm.gguf, sha256: " +
            hash_ + "}]\nroutes: [input.prompt -> lm.prompt, lm.tokens -> output.ids]\n",
        dir_.string());
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return *p;
  }
  PipelineRunOptions options() {
    PipelineRunOptions o;
    o.ctx = 256, o.max_tokens = 16, o.worker_binary = EDGE_BINARY;
    return o;
  }
  static std::vector<int32_t> run_ids(PipelineRuntime& rt, Status* st = nullptr,
                                      const std::function<void()>& on_first = nullptr) {
    std::vector<int32_t> ids;
    bool first = true;
    const Status s = rt.run({{"prompt", {"", {1, 2, 3, 4}}}}, [&](const StageEvent& e) {
      if (first && on_first) on_first();
      first = false;
      ids.insert(ids.end(), e.value.tokens.begin(), e.value.tokens.end());
    });
    if (st)
      *st = s;
    else
      EXPECT_TRUE(s.ok()) << s.to_string();
    return ids;
  }
  static pid_t worker_pid(const PipelineRuntime& rt) {
    const std::string where = rt.state_json()["stages"][0]["placement_actual"];
    return where.rfind("worker pid ", 0) == 0 ? std::stoi(where.substr(11)) : -1;
  }

  std::filesystem::path dir_;
  std::string hash_;
};

TEST_F(PipelineWorker, AWorkerGivesTheSameTokensAsTheStageInProcess) {
  RamLedger ledger(int64_t{8} << 30, "test");
  auto local = PipelineRuntime::start(spec("in_process"), ledger, options());
  ASSERT_TRUE(local.ok()) << local.status().to_string();
  const std::vector<int32_t> want = run_ids(**local);
  local->reset();
  auto remote = PipelineRuntime::start(spec("worker"), ledger, options());
  ASSERT_TRUE(remote.ok()) << remote.status().to_string();
  EXPECT_GT(worker_pid(**remote), 0);
  EXPECT_EQ(run_ids(**remote), want);
  EXPECT_EQ(run_ids(**remote), want);  // the same worker serves a second request
  EXPECT_EQ((*remote)->state_json()["stages"][0]["worker_generation"], 1);
}

TEST_F(PipelineWorker, AKilledWorkerEndsItsRequestExplicitlyAndGenerationTwoServesTheNext) {
  RamLedger ledger(int64_t{8} << 30, "test");
  auto rt = PipelineRuntime::start(spec("worker"), ledger, options());
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  const std::vector<int32_t> want = run_ids(**rt);
  const pid_t pid = worker_pid(**rt);
  ASSERT_GT(pid, 0);
  Status st;
  std::chrono::steady_clock::time_point killed;
  run_ids(**rt, &st, [&] {
    ::kill(pid, SIGKILL);
    killed = std::chrono::steady_clock::now();
  });
  const double to_error_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  ASSERT_FALSE(st.ok()) << "the request survived its worker";
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("generation 1"), std::string::npos) << st.message();
  EXPECT_LT(to_error_s, 1.0);
  EXPECT_EQ(::kill(pid, 0), -1) << "the dead worker was not reaped";
  EXPECT_EQ(run_ids(**rt), want);
  EXPECT_EQ((*rt)->state_json()["stages"][0]["worker_generation"], 2);
  EXPECT_NE(worker_pid(**rt), pid);
}

TEST_F(PipelineWorker, RetiringThePipelineLeavesNoWorkerAndNoReservation) {
  RamLedger ledger(int64_t{8} << 30, "test");
  pid_t pid = -1;
  {
    auto rt = PipelineRuntime::start(spec("worker"), ledger, options());
    ASSERT_TRUE(rt.ok()) << rt.status().to_string();
    run_ids(**rt);
    pid = worker_pid(**rt);
    EXPECT_GT(ledger.reserved(), 0);
  }
  EXPECT_EQ(ledger.reserved(), 0);
  EXPECT_EQ(::kill(pid, 0), -1) << "worker " << pid << " outlived its pipeline";
}

}  // namespace
}  // namespace edge::pipeline
