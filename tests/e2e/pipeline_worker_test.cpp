// Pipeline stages in real worker processes (our own binary, spawned by the pipeline): the
// same tokens as the stage in process; a worker killed with SIGKILL after its first event
// ends that request with an explicit error within 1 s and the next request is served by
// generation 2; retiring the pipeline leaves no worker process behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>

#include "pipeline_fixture.h"

namespace edge::pipeline {
namespace {

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
  // More tokens than the stream (1 event) and the worker's credits hold: the request is
  // still running when the first token is read.
  PipelineRunOptions o = options();
  o.max_tokens = 40, o.stream_high_water = 1;
  auto rt = PipelineRuntime::start(spec("worker"), ledger, o);
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
  EXPECT_EQ(ledger.reserved(), 0) << "a dead worker's reservation is still held";
  EXPECT_EQ(run_ids(**rt), want);
  EXPECT_GT(ledger.reserved(), 0) << "generation 2 runs without a reservation";
  EXPECT_EQ((*rt)->state_json()["stages"][0]["worker_generation"], 2);
  EXPECT_NE(worker_pid(**rt), pid);
}

// Token ids at least shm_min_bytes long go to the worker as an i32 tensor in a memfd
// buffer; the worker copies them and releases the buffer, which is reused only after that.
TEST_F(PipelineWorker, PromptsThroughSharedMemoryGiveTheSameTokens) {
  RamLedger ledger(int64_t{8} << 30, "test");
  PipelineRunOptions o = options();
  o.shm_min_bytes = 0;  // every token list
  auto local = PipelineRuntime::start(spec("in_process"), ledger, o);
  ASSERT_TRUE(local.ok()) << local.status().to_string();
  const std::vector<int32_t> want = run_ids(**local);
  local->reset();
  auto remote = PipelineRuntime::start(spec("worker"), ledger, o);
  ASSERT_TRUE(remote.ok()) << remote.status().to_string();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(run_ids(**remote), want);
  const auto t = (*remote)->state_json()["stages"][0]["transport"];
  EXPECT_EQ(t["shm_published"], 3) << t.dump();
  EXPECT_EQ(t["shm_in_use"], 0) << "a buffer the worker released is still held: " << t.dump();
  EXPECT_GE(t["shm_slots"].get<int>(), 1);
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
