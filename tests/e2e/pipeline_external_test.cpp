// An external.openai.text.v1 stage with our own `edge-infer serve` as its backend (spawned
// by the pipeline from the pinned binary): the same text as the stage in process, with the
// placement the server reports; a server binary whose hash differs is refused before
// anything starts; an undersized reservation fails with "RSS exceeds stage reservation";
// a backend killed mid-request ends that request with an explicit error and the next one
// is served by generation 2; a cancelled request ends kCancelled on a backend that keeps
// serving; retiring the stage or the pipeline leaves no backend process and no reservation.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "convert/random_model.h"
#include "core/process_rss.h"
#include "pipeline/graph/artifact.h"
#include "pipeline/graph/executor.h"
#include "pipeline/stages/external_stage.h"

namespace edge::pipeline {
namespace {

const std::string kZeroHash(64, '0');

struct Output {
  Status status;
  std::string text;
  std::vector<int32_t> ids;
  int text_events = 0;
  bool last_text_terminal = false;
};

class PipelineExternal : public ::testing::Test {
 protected:
  // The server artifact is a copy of the binary this build made: pinned by its hash for the
  // whole suite, whatever a rebuild does to the original meanwhile.
  static void SetUpTestSuite() {
    bin_dir_ = std::filesystem::temp_directory_path() /
               ("edge_pipeline_external_bin_" + std::to_string(::getpid()));
    std::filesystem::create_directories(bin_dir_);
    server_ = (bin_dir_ / "edge-infer").string();
    std::filesystem::copy_file(EDGE_BINARY, server_,
                               std::filesystem::copy_options::overwrite_existing);
    auto h = sha256_file(server_);
    ASSERT_TRUE(h.ok()) << h.status().to_string();
    server_hash_ = *h;
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(bin_dir_); }
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("edge_pipeline_external_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    RandomModelOptions o;
    o.n_layer = 2, o.n_embd = 64, o.n_vocab = 512;
    ASSERT_TRUE(write_random_model(o, (dir_ / "lm.gguf").string()).ok());
    hash_ = *sha256_file((dir_ / "lm.gguf").string());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  PipelineSpec parse(const std::string& stage) {
    auto p = parse_pipeline("stages:\n" + stage +
                                "routes: [input.prompt -> lm.prompt, lm.tokens -> output.ids, "
                                "lm.text -> output.text]\n",
                            dir_.string());
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return p.ok() ? *p : PipelineSpec{};
  }
  PipelineSpec in_process() {
    return parse(
        "  - name: lm\n    kind: lm\n    contract: text.generate@1\n"
        "    reservation: 1GiB\n    artifacts: [{role: model, path: lm.gguf, sha256: " +
        hash_ + "}]\n");
  }
  // Declared reservations: the stage's RSS is the server process's, which a sanitizer's
  // shadow memory would inflate far past any estimate.
  PipelineSpec external(const std::string& reservation = "1GiB",
                        const std::string& server_hash = server_hash_,
                        const std::string& model = "lm.gguf") {
    const std::string model_hash = *sha256_file((dir_ / model).string());
    return parse(
        "  - name: lm\n    kind: external\n    contract: text.generate@1\n"
        "    placement: external\n    backend: external.openai.text.v1\n"
        "    capacity: 2\n    reservation: " +
        reservation + "\n    artifacts:\n      - {role: server, path: " + server_ +
        ", sha256: " + server_hash + "}\n      - {role: model, path: " + model +
        ", sha256: " + model_hash + "}\n");
  }
  static PipelineRunOptions options() {
    PipelineRunOptions o;
    o.ctx = 512, o.max_tokens = 200, o.n_threads = 1;
    return o;
  }

  static Output run(PipelineRuntime& rt, const PortValue& prompt,
                    const std::function<void()>& on_first = nullptr) {
    Output out;
    out.status = rt.run({{"prompt", prompt}}, [&](const StageEvent& e) {
      if (out.text_events == 0 && e.port == "text" && on_first) on_first();
      if (e.port == "text") {
        out.text += e.value.text;
        ++out.text_events;
        out.last_text_terminal = e.terminal;
      } else {
        out.ids.insert(out.ids.end(), e.value.tokens.begin(), e.value.tokens.end());
      }
    });
    return out;
  }
  static std::string placement(const PipelineRuntime& rt) {
    return rt.state_json()["stages"][0]["placement_actual"];
  }
  static pid_t backend_pid(const PipelineRuntime& rt) {
    const std::string where = placement(rt);
    return where.rfind("external pid ", 0) == 0 ? std::stoi(where.substr(13)) : -1;
  }
  static uint32_t generation(const PipelineRuntime& rt) {
    return rt.state_json()["stages"][0]["worker_generation"];
  }
  // Processes this test started and has not reaped (only itself when none).
  static size_t own_processes() { return process_tree(::getpid()).size(); }

  static inline std::filesystem::path bin_dir_;
  static inline std::string server_, server_hash_;
  std::filesystem::path dir_;
  std::string hash_;
  const PortValue ids_prompt_{"", {1, 2, 3, 4}};
};

TEST_F(PipelineExternal, OurServerAsTheBackendGivesTheTextOfTheStageInProcess) {
  RamLedger ledger(int64_t{8} << 30, "test");
  const PortValue text_prompt{"Once upon a time", {}};
  Output want_ids, want_text;
  {
    auto local = PipelineRuntime::start(in_process(), ledger, options());
    ASSERT_TRUE(local.ok()) << local.status().to_string();
    want_ids = run(**local, ids_prompt_);
    want_text = run(**local, text_prompt);
  }
  ASSERT_TRUE(want_ids.status.ok()) << want_ids.status.to_string();
  ASSERT_FALSE(want_ids.text.empty());
  ASSERT_FALSE(want_ids.ids.empty());

  auto rt = PipelineRuntime::start(external(), ledger, options());
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  // What ran, as the backend reported it: our server on the CPU.
  EXPECT_GT(backend_pid(**rt), 0) << placement(**rt);
  EXPECT_NE(placement(**rt).find(": cpu ("), std::string::npos) << placement(**rt);
  for (int round = 0; round < 2; ++round) {  // the same backend serves a second request
    const Output got = run(**rt, ids_prompt_);
    ASSERT_TRUE(got.status.ok()) << got.status.to_string();
    EXPECT_EQ(got.text, want_ids.text);
    EXPECT_TRUE(got.last_text_terminal);
    // Our server reports the ids behind its text (return_tokens): the same ids.
    EXPECT_EQ(got.ids, want_ids.ids);
  }
  const Output got = run(**rt, text_prompt);
  ASSERT_TRUE(got.status.ok()) << got.status.to_string();
  EXPECT_EQ(got.text, want_text.text);
  EXPECT_EQ(generation(**rt), 1u);
  EXPECT_LE((*rt)->state_json()["stages"][0]["loaded_rss_bytes"].get<int64_t>(), int64_t{1} << 30);
}

TEST_F(PipelineExternal, AServerBinaryThatDiffersFromItsHashIsRefusedBeforeItStarts) {
  RamLedger ledger(int64_t{8} << 30, "test");
  auto rt = PipelineRuntime::start(external("1GiB", kZeroHash), ledger, options());
  ASSERT_FALSE(rt.ok());
  EXPECT_NE(rt.status().message().find("differs from the declared artifact hash"),
            std::string::npos)
      << rt.status().message();
  EXPECT_NE(rt.status().message().find("server"), std::string::npos) << rt.status().message();
  EXPECT_EQ(ledger.reserved(), 0);
  EXPECT_EQ(own_processes(), 1u) << "a backend was started from an unverified binary";
}

TEST_F(PipelineExternal, AnUndersizedReservationFailsAndLeavesNoBackend) {
  RamLedger ledger(int64_t{8} << 30, "test");
  auto rt = PipelineRuntime::start(external("1MiB"), ledger, options());
  ASSERT_FALSE(rt.ok());
  EXPECT_NE(rt.status().message().find("RSS exceeds stage reservation"), std::string::npos)
      << rt.status().message();
  EXPECT_EQ(ledger.reserved(), 0);
  EXPECT_EQ(own_processes(), 1u) << "the backend outlived its failed start";
}

TEST_F(PipelineExternal, AKilledBackendEndsItsRequestExplicitlyAndGenerationTwoServesTheNext) {
  // Killed when its first event arrives, the backend must still have tokens to generate:
  // a model big enough that a request takes far longer than that event takes to arrive
  // (the tiny one streams 200 tokens in ~6 ms; this one in ~150).
  RandomModelOptions big;
  big.n_layer = 3, big.n_embd = 512, big.n_vocab = 512;
  ASSERT_TRUE(write_random_model(big, (dir_ / "big.gguf").string()).ok());
  RamLedger ledger(int64_t{8} << 30, "test");
  auto rt = PipelineRuntime::start(external("1GiB", server_hash_, "big.gguf"), ledger, options());
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  std::chrono::steady_clock::time_point first_event;
  const Output want =
      run(**rt, ids_prompt_, [&] { first_event = std::chrono::steady_clock::now(); });
  const double streamed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - first_event)
          .count();
  ASSERT_TRUE(want.status.ok()) << want.status.to_string();
  ASSERT_GT(streamed_ms, 50) << "the request streams too fast to be interrupted: a bigger model";
  const pid_t pid = backend_pid(**rt);
  ASSERT_GT(pid, 0);
  std::chrono::steady_clock::time_point killed;
  const Output cut = run(**rt, ids_prompt_, [&] {
    ::kill(pid, SIGKILL);
    killed = std::chrono::steady_clock::now();
  });
  const double to_error_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  ASSERT_FALSE(cut.status.ok()) << "the request survived its backend";
  EXPECT_EQ(cut.status.code(), StatusCode::kUnavailable);
  const std::string& m = cut.status.message();
  EXPECT_NE(m.find("stage 'lm'"), std::string::npos) << m;
  EXPECT_NE(m.find("pid " + std::to_string(pid) + " (generation 1)"), std::string::npos) << m;
  EXPECT_NE(m.find("killed by signal 9"), std::string::npos) << m;
  EXPECT_LT(to_error_s, 1.5);
  EXPECT_EQ(::kill(pid, 0), -1) << "the dead backend was not reaped";

  const Output next = run(**rt, ids_prompt_);
  ASSERT_TRUE(next.status.ok()) << next.status.to_string();
  EXPECT_EQ(next.text, want.text);
  EXPECT_EQ(generation(**rt), 2u);
  EXPECT_NE(backend_pid(**rt), pid);
}

TEST_F(PipelineExternal, ACancelledRequestEndsCancelledAndTheBackendKeepsServing) {
  // The stage driven directly, to hold its first event until the cancel is in.
  const PipelineSpec p = external();
  ASSERT_EQ(p.stages.size(), 1u);
  auto runner = start_external_stage(p, p.stages[0], options());
  ASSERT_TRUE(runner.ok()) << runner.status().to_string();
  StageRunner& r = **runner;
  // The first event waits until the request is cancelled: the stream must then stop at
  // the next chunk, however fast the backend is.
  std::mutex mu;
  std::condition_variable cv;
  bool first = false, cancelled = false;
  std::vector<StageEvent> events;
  Status st;
  std::thread t([&] {
    st = r.run(7, {{"prompt", ids_prompt_}}, [&](StageEvent e) {
      std::unique_lock<std::mutex> l(mu);
      events.push_back(e);
      if (!first) {
        first = true;
        cv.notify_all();
        cv.wait(l, [&] { return cancelled; });
      }
    });
  });
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return first; });
  }
  r.cancel(7);
  {
    std::lock_guard<std::mutex> l(mu);
    cancelled = true;
  }
  cv.notify_all();
  t.join();
  EXPECT_EQ(st.code(), StatusCode::kCancelled) << st.to_string();
  ASSERT_GE(events.size(), 2u);
  EXPECT_TRUE(events.back().terminal);
  EXPECT_EQ(events.back().error.code(), StatusCode::kCancelled);
  EXPECT_EQ(events.back().seq, events[events.size() - 2].seq);  // both ports end together

  std::vector<StageEvent> again;
  const Status ok = r.run(8, {{"prompt", ids_prompt_}}, [&](StageEvent e) { again.push_back(e); });
  EXPECT_TRUE(ok.ok()) << ok.to_string();
  ASSERT_FALSE(again.empty());
  EXPECT_TRUE(again.back().terminal);
  EXPECT_EQ(r.generation(), 1u);
  r.cancel(9);  // before its run: refused when it comes
  const Status early = r.run(9, {{"prompt", ids_prompt_}}, [](StageEvent) {});
  EXPECT_EQ(early.code(), StatusCode::kCancelled) << early.to_string();
}

TEST_F(PipelineExternal, RetiringTheStageOrThePipelineLeavesNoBackendAndNoReservation) {
  RamLedger ledger(int64_t{8} << 30, "test");
  pid_t first = -1, second = -1;
  {
    auto rt = PipelineRuntime::start(external(), ledger, options());
    ASSERT_TRUE(rt.ok()) << rt.status().to_string();
    ASSERT_TRUE(run(**rt, ids_prompt_).status.ok());
    first = backend_pid(**rt);
    ASSERT_TRUE((*rt)->retire_stage("lm").ok());
    EXPECT_EQ(::kill(first, 0), -1) << "the retired backend " << first << " was not reaped";
    ASSERT_TRUE(run(**rt, ids_prompt_).status.ok());
    second = backend_pid(**rt);
    EXPECT_NE(second, first);
    EXPECT_EQ(generation(**rt), 2u);
    EXPECT_GT(ledger.reserved(), 0);
  }
  EXPECT_EQ(ledger.reserved(), 0);
  EXPECT_EQ(::kill(second, 0), -1) << "backend " << second << " outlived its pipeline";
  EXPECT_EQ(own_processes(), 1u);
}

}  // namespace
}  // namespace edge::pipeline
