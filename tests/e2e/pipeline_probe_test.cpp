// The text reliability probe (the seed's, harness/probe.h) over a pipeline whose language
// model runs in a worker process: baseline; a stream saturated to its high-water mark (the
// worker stalls on credits, nothing grows); the same tokens after saturation; cancel after
// saturation; a stale copied handle refused; a worker killed after the first token ends
// the request with an explicit terminal error; a request after that succeeds. Then
// capacity, and retirement under load: no request lost or duplicated, epochs 1..N without
// a gap.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "harness/probe.h"
#include "harness/probe_pipeline_util.h"
#include "pipeline_fixture.h"

namespace edge::pipeline {
namespace {

using std::chrono::milliseconds;

constexpr int32_t kHighWater = 4;

class PipelineProbe : public PipelineWorker {
 protected:
  PipelineRunOptions probe_options() {
    PipelineRunOptions o = options();
    o.max_tokens = 40;  // several events more than the stream holds
    o.stream_high_water = kHighWater;
    return o;
  }
  static const std::map<std::string, PortValue>& prompt() {
    static const std::map<std::string, PortValue> p = {{"prompt", {"", {1, 2, 3, 4}}}};
    return p;
  }
  static std::vector<int32_t> read_all(PipelineRuntime& rt, const PipelineHandle& h, Status* err) {
    const probe_detail::ReadOut out = probe_detail::read_all(rt, h, std::chrono::seconds(30));
    *err = out.end;
    return out.ids;
  }
  static bool wait_for_depth(PipelineRuntime& rt, const PipelineHandle& h, int32_t depth) {
    return probe_detail::wait_for_depth(rt, h, depth, std::chrono::seconds(30));
  }
};

TEST_F(PipelineProbe, TextProbeOverAWorker) {
  RamLedger ledger(int64_t{8} << 30, "test");
  auto rt = PipelineRuntime::start(spec("worker"), ledger, probe_options());
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  ProbeReport report;
  text_probe(**rt, TextProbeOptions{}, report);
  for (const char* name : {"text.baseline", "text.saturation", "text.same_tokens_after_saturation",
                           "text.stale_handle", "text.cancel", "text.worker_killed",
                           "text.after_worker_killed"}) {
    const ProbeCheck* c = report.check(name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_EQ(c->result, "pass") << name << ": " << c->detail;
  }
  EXPECT_TRUE(report.passed()) << report.to_json().dump(2);
  EXPECT_EQ(report.check("text.saturation")->figures["max_depth"], kHighWater);
  EXPECT_NE(report.check("text.worker_killed")->figures["error"].get<std::string>().find("generation 1"),
            std::string::npos);
  EXPECT_EQ((*rt)->state_json()["stages"][0]["worker_generation"], 2);
  EXPECT_EQ((*rt)->epochs_issued(), 5u);  // baseline, saturated, cancelled, killed, after
}

// In process there is no worker to kill: that check is skipped, named, and the rest pass.
TEST_F(PipelineProbe, InProcessSkipsTheKill) {
  RamLedger ledger(int64_t{8} << 30, "test");
  auto rt = PipelineRuntime::start(spec("in_process"), ledger, probe_options());
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  ProbeReport report;
  text_probe(**rt, TextProbeOptions{}, report);
  EXPECT_TRUE(report.passed()) << report.to_json().dump(2);
  ASSERT_NE(report.check("text.worker_killed"), nullptr);
  EXPECT_EQ(report.check("text.worker_killed")->result, "skipped");
}

TEST_F(PipelineProbe, CapacityRefusesTheRequestBeyondIt) {
  RamLedger ledger(int64_t{8} << 30, "test");
  auto rt = PipelineRuntime::start(spec("in_process", 2), ledger, probe_options());
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  auto a = (*rt)->submit(prompt()), b = (*rt)->submit(prompt());
  ASSERT_TRUE(a.ok() && b.ok());
  // Both stall at their high-water marks: still in flight, so a third is refused.
  ASSERT_TRUE(wait_for_depth(**rt, *a, kHighWater));
  auto c = (*rt)->submit(prompt());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(c.status().message().find("capacity"), std::string::npos);
  Status st;
  read_all(**rt, *a, &st);
  EXPECT_TRUE(st.ok());
  read_all(**rt, *b, &st);
  EXPECT_TRUE(st.ok());
  EXPECT_TRUE((*rt)->submit(prompt()).ok()) << "room again once they ended";
}

// Retirement under load: clients keep the worker busy while its generation is retired.
// Every request ends once, without error; the epochs seen are 1..N; generation 2 serves
// what came after, and generation 1 drains and exits.
TEST_F(PipelineProbe, RetirementUnderLoadLosesAndDuplicatesNothing) {
  constexpr int kClients = 3, kPerClient = 4;
  RamLedger ledger(int64_t{8} << 30, "test");
  auto rt = PipelineRuntime::start(spec("worker", kClients), ledger, options());
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  PipelineRuntime& p = **rt;
  const pid_t first_pid = worker_pid(p);
  std::mutex mu;
  std::multiset<uint64_t> ended;  // epochs whose end was read
  std::vector<std::string> errors;
  std::atomic<int> done{0};
  auto client = [&] {
    for (int i = 0; i < kPerClient; ++i) {
      auto h = p.submit(prompt());
      if (!h.ok()) {
        std::lock_guard<std::mutex> l(mu);
        errors.push_back(h.status().to_string());
        continue;
      }
      Status st;
      const std::vector<int32_t> ids = read_all(p, *h, &st);
      std::lock_guard<std::mutex> l(mu);
      ended.insert(h->epoch);
      if (!st.ok() || ids.empty()) errors.push_back("epoch " + std::to_string(h->epoch) + ": " +
                                                     st.to_string());
      ++done;
    }
  };
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) clients.emplace_back(client);
  while (done < kClients) std::this_thread::sleep_for(milliseconds(2));  // some are in flight
  ASSERT_TRUE(p.retire_stage("lm").ok());
  for (auto& t : clients) t.join();
  EXPECT_TRUE(errors.empty()) << errors.front();
  const uint64_t n = kClients * kPerClient;
  EXPECT_EQ(p.epochs_issued(), n);
  std::set<uint64_t> unique(ended.begin(), ended.end());
  EXPECT_EQ(ended.size(), n) << "a request ended twice or never";
  EXPECT_EQ(unique.size(), n);
  EXPECT_EQ(*unique.begin(), 1u);
  EXPECT_EQ(*unique.rbegin(), n);
  EXPECT_EQ(p.state_json()["stages"][0]["worker_generation"], 2);
  // Generation 1 drained and exited (it is reaped once the runtime looks again).
  auto h = p.submit(prompt());
  ASSERT_TRUE(h.ok());
  Status st;
  read_all(p, *h, &st);
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(::kill(first_pid, 0), -1) << "the retired generation is still running";
  EXPECT_EQ(p.epochs_issued(), n + 1);
  EXPECT_FALSE(p.retire_stage("nope").ok());
}

}  // namespace
}  // namespace edge::pipeline
