// The text reliability probe (the seed's, as a test) over a pipeline whose language model
// runs in a worker process: baseline; a stream saturated to its high-water mark (the
// worker stalls on credits, nothing grows); the same tokens after saturation; cancel after
// saturation; a stale copied handle refused; a worker killed after the first token ends
// the request with an explicit terminal error; a request after that succeeds. Then
// retirement under load: no request lost or duplicated, epochs 1..N without a gap.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "pipeline_fixture.h"

namespace edge::pipeline {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

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
  // Reads a request to its end: its tokens, and its end event's error.
  static std::vector<int32_t> read_all(PipelineRuntime& rt, const PipelineHandle& h, Status* err) {
    std::vector<int32_t> ids;
    for (;;) {
      auto e = rt.next(h, std::chrono::seconds(30));
      if (!e.ok()) {
        *err = e.status();
        return ids;
      }
      if (e->end_of_request) {
        *err = e->error;
        return ids;
      }
      ids.insert(ids.end(), e->value.tokens.begin(), e->value.tokens.end());
    }
  }
  // Waits (bounded) until the request's stream holds `depth` unread events.
  static bool wait_for_depth(PipelineRuntime& rt, const PipelineHandle& h, int32_t depth) {
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (Clock::now() < deadline) {
      auto d = rt.stream_depth(h);
      if (d.ok() && d->first >= depth) return true;
      std::this_thread::sleep_for(milliseconds(5));  // polling a condition, not a guess
    }
    return false;
  }
};

TEST_F(PipelineProbe, TextProbeOverAWorker) {
  RamLedger ledger(int64_t{8} << 30, "test");
  auto rt = PipelineRuntime::start(spec("worker"), ledger, probe_options());
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  PipelineRuntime& p = **rt;

  // 1. Baseline.
  Status st;
  auto h0 = p.submit(prompt());
  ASSERT_TRUE(h0.ok()) << h0.status().to_string();
  const std::vector<int32_t> baseline = read_all(p, *h0, &st);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_GT(baseline.size(), static_cast<size_t>(kHighWater));

  // 2. Saturation: nobody reads; the stream fills to its high-water mark and stops there.
  auto h1 = p.submit(prompt());
  ASSERT_TRUE(h1.ok());
  ASSERT_TRUE(wait_for_depth(p, *h1, kHighWater)) << "the stream never filled";
  // The worker stays stalled on its credits: the depth never exceeds the mark.
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
    auto d = p.stream_depth(*h1);
    ASSERT_TRUE(d.ok());
    EXPECT_LE(d->first, kHighWater);
    EXPECT_LE(d->second, kHighWater) << "the high-water mark was exceeded";
  }
  // 3. The same tokens after saturation.
  const PipelineHandle copy = *h1;
  EXPECT_EQ(read_all(p, *h1, &st), baseline);
  EXPECT_TRUE(st.ok()) << st.to_string();

  // 4. A stale copied handle is refused, by every call.
  EXPECT_EQ(p.next(copy, milliseconds(10)).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(p.cancel(copy).code(), StatusCode::kNotFound);
  EXPECT_NE(p.cancel(copy).message().find("stale handle"), std::string::npos);
  PipelineHandle forged = *h0;
  forged.token ^= 1;
  EXPECT_EQ(p.next(forged, milliseconds(10)).status().code(), StatusCode::kNotFound);

  // 5. Cancel after saturation ends the request at once, with kCancelled.
  auto h2 = p.submit(prompt());
  ASSERT_TRUE(h2.ok());
  ASSERT_TRUE(wait_for_depth(p, *h2, kHighWater));
  const auto cancelled_at = Clock::now();
  ASSERT_TRUE(p.cancel(*h2).ok());
  read_all(p, *h2, &st);
  EXPECT_EQ(st.code(), StatusCode::kCancelled) << st.to_string();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - cancelled_at).count(), 1.0);

  // 6. The worker killed after the first token: an explicit terminal error within 1 s.
  const pid_t pid = worker_pid(p);
  ASSERT_GT(pid, 0);
  auto h3 = p.submit(prompt());
  ASSERT_TRUE(h3.ok());
  auto first = p.next(*h3, std::chrono::seconds(30));
  ASSERT_TRUE(first.ok() && !first->end_of_request);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  const auto killed_at = Clock::now();
  read_all(p, *h3, &st);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.to_string();
  EXPECT_NE(st.message().find("generation 1"), std::string::npos) << st.message();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - killed_at).count(), 1.0);

  // 7. A request after that succeeds, on generation 2, with the baseline's tokens.
  auto h4 = p.submit(prompt());
  ASSERT_TRUE(h4.ok());
  EXPECT_EQ(read_all(p, *h4, &st), baseline);
  EXPECT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(p.state_json()["stages"][0]["worker_generation"], 2);
  EXPECT_EQ(p.epochs_issued(), 5u);
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
