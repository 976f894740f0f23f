// The grid runner with real commands (/bin/echo, /bin/sleep), a core loaded on purpose by
// a pinned spinning thread, the host lock, and gnuplot for the charts. No timing gates:
// wall times are only checked to be recorded.
#include "harness/grid.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <thread>

#include "harness/grid_host.h"
#include "harness/grid_process.h"

namespace edge {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    char tpl[] = "/tmp/edge-grid-test-XXXXXX";
    path = ::mkdtemp(tpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// A thread spinning on one core until destroyed.
class Spinner {
 public:
  explicit Spinner(int cpu) {
    thread_ = std::thread([this, cpu] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      pthread_setaffinity_np(pthread_self(), sizeof set, &set);
      volatile uint64_t x = 0;
      started_ = true;
      while (!stop_) x = x + 1;
    });
    while (!started_) std::this_thread::yield();
  }
  ~Spinner() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false}, started_{false};
  std::thread thread_;
};

std::string echo_arm(const std::string& name, const std::string& out) {
  return "  - name: " + name + "\n    command: [/bin/echo, '" + out + "']\n    parse: json\n";
}

GridOptions quiet_options(const TempDir& d) {
  GridOptions o;
  o.allow_noisy = true;  // the test machine is shared: runs are labelled, not refused
  o.lock_path = d.file("grid.lock");
  o.quiet = true;
  return o;
}

Expected<json> run_text(const std::string& text, const GridOptions& o) {
  ASSIGN_OR_RETURN(GridSpec g, parse_grid_spec(text, "/nonexistent/edge-infer"));
  return run_grid(g, o);
}

TEST(GridTest, PassesRotateTheStartingArm) {
  EXPECT_EQ(pass_order(3, 0), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(pass_order(3, 1), (std::vector<size_t>{1, 2, 0}));
  EXPECT_EQ(pass_order(3, 2), (std::vector<size_t>{2, 0, 1}));
  EXPECT_EQ(pass_order(3, 4), (std::vector<size_t>{1, 2, 0}));
  EXPECT_EQ(pass_order(1, 5), (std::vector<size_t>{0}));
}

TEST(GridTest, DirectionIsInferredFromTheMetricName) {
  for (const char* higher : {"tg128_ts", "pp512_ts", "c4_throughput_tok_s", "tg16_gbps",
                             "tg16_fraction_of_ceiling", "tokens_per_s"})
    EXPECT_FALSE(lower_is_better(higher)) << higher;
  for (const char* lower : {"c4_ttft_ms_p50", "c1_itl_ms_p99", "wall_s", "peak_rss_anon_mib",
                            "ready_s", "latency_us", "c2_errors", "model_bytes"})
    EXPECT_TRUE(lower_is_better(lower)) << lower;
  std::string why;
  EXPECT_FALSE(lower_is_better("quality", &why));
  EXPECT_NE(why.find("assumed"), std::string::npos);
}

TEST(GridTest, ParsesLlamaBenchMarkdownAndJson) {
  const std::string md =
      "| model | size | params | backend | threads | test | t/s |\n"
      "| --- | ---: | ---: | --- | ---: | ---: | ---: |\n"
      "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CPU | 2 | pp512 | 21.50 ± 0.31 |\n"
      "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CPU | 2 | tg128 | 7.25 ± 0.02 |\n";
  auto m = parse_arm_output("build: abc\n" + md, ParseMode::kAuto, nullptr);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_DOUBLE_EQ(m->at("pp512_ts"), 21.5);
  EXPECT_DOUBLE_EQ(m->at("tg128_ts"), 7.25);
  const std::string js =
      R"([{"n_prompt":0,"n_gen":16,"avg_ts":40.5,"roofline":{"effective_gbps":3.0,
      "fraction_of_ceiling":0.25,"ceiling_gbps":12.0,"bytes_per_token":1000},
      "provenance":{"engine":{"kernel_path":"avx2","n_threads":1}}}])";
  json engine;
  auto j = parse_arm_output(js, ParseMode::kLlamaBenchJson, &engine);
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_DOUBLE_EQ(j->at("tg16_ts"), 40.5);
  EXPECT_DOUBLE_EQ(j->at("tg16_fraction_of_ceiling"), 0.25);
  EXPECT_EQ(engine["kernel_path"], "avx2");
  EXPECT_FALSE(parse_arm_output("no table here", ParseMode::kLlamaBenchMd, nullptr).ok());
  json ext;  // llama-bench's own records: threads and backend, no kernel path of ours
  ASSERT_TRUE(
      parse_arm_output(R"([{"n_prompt":512,"n_gen":0,"avg_ts":50,"n_threads":2,"backends":"CPU"}])",
                       ParseMode::kAuto, &ext)
          .ok());
  EXPECT_EQ(ext["n_threads"], 2);
  EXPECT_FALSE(ext.contains("kernel_path"));
  // bench --spec-acceptance: one record per acceptance, kept apart by it.
  auto spec = parse_arm_output(
      R"([{"n_prompt":32,"n_gen":128,"avg_ts":50,"plain_ts":25,"speedup":2.0,
          "speculative":{"alpha":0.8,"tokens_per_pass":2.8}},
         {"n_prompt":32,"n_gen":128,"avg_ts":24,"plain_ts":25,"speedup":0.96,
          "speculative":{"alpha":0,"tokens_per_pass":1.01}}])",
      ParseMode::kLlamaBenchJson, nullptr);
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  EXPECT_DOUBLE_EQ(spec->at("tg128_spec_a0.80_speedup"), 2.0);
  EXPECT_DOUBLE_EQ(spec->at("tg128_spec_a0.00_ts"), 24.0);
  EXPECT_DOUBLE_EQ(spec->at("tg128_spec_a0.00_plain_ts"), 25.0);
  EXPECT_FALSE(spec->count("tg128_ts"));
}

TEST(GridTest, OwnedProcessIsTimedKilledOnTimeoutAndReaped) {
  SpawnOptions so;
  auto ok = run_owned({"/bin/sleep", "0.1"}, so);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_TRUE(ok->ok());
  EXPECT_GT(ok->wall_s, 0.0);
  so.timeout_s = 0.3;
  auto slow = run_owned({"/bin/sleep", "30"}, so);
  ASSERT_TRUE(slow.ok());
  EXPECT_TRUE(slow->timed_out);
  EXPECT_EQ(slow->term_signal, SIGKILL);
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);  // nothing left unreaped
  EXPECT_EQ(errno, ECHILD);
  auto missing = run_owned({"/nonexistent/program"}, so);
  EXPECT_FALSE(missing.ok());
}

TEST(GridTest, PreflightDetectsADeliberatelyLoadedCore) {
  const std::vector<int> cores = allowed_cores();
  ASSERT_FALSE(cores.empty());
  const int cpu = cores.back();
  Spinner spin(cpu);
  auto pf = preflight_cores({cpu}, 0.5, 0.5);
  ASSERT_TRUE(pf.ok()) << pf.status().to_string();
  EXPECT_TRUE(pf->contended);
  EXPECT_GT(pf->cores[0].busy, 0.5);
  EXPECT_EQ(pf->to_json()["busy_per_core"].size(), 1u);
}

TEST(GridTest, ContendedRunIsRefusedUnlessLabelled) {
  TempDir d;
  const int cpu = allowed_cores().back();
  Spinner spin(cpu);
  const std::string text = "passes: 1\nmax_busy: 0.5\ncpus: [" + std::to_string(cpu) +
                           "]\narms:\n" + echo_arm("a", R"({"x_ms": 1})");
  GridOptions o = quiet_options(d);
  o.allow_noisy = false;
  auto refused = run_text(text, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("--allow-noisy"), std::string::npos);
  o.allow_noisy = true;
  auto labelled = run_text(text, o);
  ASSERT_TRUE(labelled.ok()) << labelled.status().to_string();
  EXPECT_TRUE((*labelled)["runs"][0]["contended"].get<bool>());
  EXPECT_EQ((*labelled)["summary"]["contended_runs"], 1);
}

TEST(GridTest, ATimedOutArmIsKilledAndRecordedAsFailed) {
  TempDir d;
  auto r = run_text(
      "passes: 1\npreflight_s: 0.05\ntimeout_s: 0.3\narms:\n"
      "  - name: stuck\n    command: [/bin/sleep, '30']\n    parse: none\n" +
          echo_arm("fine", R"({"x_ms": 1})"),
      quiet_options(d));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const json& stuck = (*r)["runs"][0];
  EXPECT_FALSE(stuck["ok"].get<bool>());
  EXPECT_TRUE(stuck["timed_out"].get<bool>());
  EXPECT_NE(stuck["error"].get<std::string>().find("timeout"), std::string::npos);
  EXPECT_TRUE((*r)["runs"][1]["ok"].get<bool>());  // the grid goes on
  EXPECT_EQ((*r)["summary"]["failed_runs"], 1);
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);  // reaped
  EXPECT_EQ(errno, ECHILD);
}

TEST(GridTest, CoresOutsideTheAffinityAreRefused) {
  TempDir d;
  auto r = run_text("passes: 1\ncpus: [4095]\narms:\n" + echo_arm("a", R"({"x_ms": 1})"),
                    quiet_options(d));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(GridTest, HostLockRefusesASecondGrid) {
  TempDir d;
  auto held = HostLock::acquire(d.file("grid.lock"));
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(HostLock::acquire(d.file("grid.lock")).status().code(), StatusCode::kResourceExhausted);
  auto r = run_text("passes: 1\narms:\n" + echo_arm("a", R"({"x_ms": 1})"), quiet_options(d));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("host lock"), std::string::npos);
  *held = HostLock::acquire(d.file("other.lock")).value();  // releases the first
  EXPECT_TRUE(HostLock::acquire(d.file("grid.lock")).ok());
}

TEST(GridTest, EqualArmsAreNotARankingAndPassesRotate) {
  TempDir d;
  const std::string text =
      "name: equal\npasses: 3\npreflight_s: 0.05\narms:\n" +
      echo_arm("a", R"({"value_ms": 5, "rate_ts": 10})") +
      echo_arm("b", R"({"value_ms": 5, "rate_ts": 10})") +
      "  - name: sleeper\n    command: [/bin/sleep, '0.05']\n    parse: none\n";
  auto r = run_text(text, quiet_options(d));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const json& runs = (*r)["runs"];
  ASSERT_EQ(runs.size(), 9u);
  EXPECT_EQ(runs[0]["arm"], "a");
  EXPECT_EQ(runs[3]["arm"], "b");  // pass 1 starts at the second arm
  EXPECT_EQ(runs[6]["arm"], "sleeper");
  for (const json& run : runs) {
    EXPECT_TRUE(run["ok"].get<bool>()) << run.dump();
    EXPECT_TRUE(run["provenance"].contains("commit"));
    EXPECT_TRUE(run["provenance"].contains("affinity"));
    EXPECT_TRUE(run.contains("preflight"));
  }
  const json& v = (*r)["summary"]["metrics"]["value_ms"];
  EXPECT_EQ(v["direction"], "lower is better");
  ASSERT_EQ(v["comparisons"].size(), 1u);
  EXPECT_NE(v["comparisons"][0]["verdict"].get<std::string>().find("not a ranking"),
            std::string::npos);
  EXPECT_EQ((*r)["summary"]["metrics"]["wall_s"]["arms"].size(), 3u);  // every arm is timed
}

TEST(GridTest, SeparatedArmsRankInTheMetricsDirection) {
  TempDir d;
  const std::string text = "passes: 2\npreflight_s: 0.05\narms:\n" +
                           echo_arm("slow", R"({"lat_ms": 20, "tg_ts": 10})") +
                           echo_arm("fast", R"({"lat_ms": 10, "tg_ts": 20})");
  auto r = run_text(text, quiet_options(d));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  for (const char* m : {"lat_ms", "tg_ts"}) {
    const json& c = (*r)["summary"]["metrics"][m]["comparisons"][0];
    EXPECT_EQ(c["better"], "fast") << m;
    EXPECT_EQ(c["verdict"].get<std::string>().rfind("ranking", 0), 0u) << m;
    EXPECT_DOUBLE_EQ(c["factor"].get<double>(), 2.0) << m;
  }
  EXPECT_NE(grid_summary_text((*r)["summary"]).find("fast over slow"), std::string::npos);
}

TEST(GridTest, ChartsAreDrawnByGnuplot) {
  TempDir d;
  const std::string text = "passes: 2\npreflight_s: 0.05\nrss_interval_ms: 10\narms:\n" +
                           echo_arm("a", R"({"tg_ts": 10})") + echo_arm("b", R"({"tg_ts": 11})") +
                           "  - name: sleeper\n    command: [/bin/sleep, '0.2']\n    parse: none\n";
  GridOptions o = quiet_options(d);
  o.plots_dir = d.file("plots");
  auto r = run_text(text, o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE(r->contains("plots")) << r->value("plots_error", std::string());
  std::ifstream svg(d.file("plots/metric-tg_ts.svg"));
  ASSERT_TRUE(svg.good());
  std::string text_svg((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  EXPECT_NE(text_svg.find("<svg"), std::string::npos);
  EXPECT_NE(text_svg.find("tg_ts"), std::string::npos);
  EXPECT_TRUE(fs::exists(d.file("plots/rss.svg")));  // the sleeper was sampled
}

TEST(GridTest, BadGridFilesAreRefused) {
  EXPECT_FALSE(parse_grid_spec("arms: []", "e").ok());
  EXPECT_FALSE(parse_grid_spec("arms:\n  - name: a\n", "e").ok());
  EXPECT_FALSE(parse_grid_spec("arms:\n  - name: a\n    command: x\n", "e").ok());
  EXPECT_FALSE(
      parse_grid_spec(echo_arm("a", "{}").insert(0, "arms:\n") + echo_arm("a", "{}"), "e").ok());
  auto g = parse_grid_spec(
      "arms:\n  - name: e\n    bench: {model: m.gguf, p: [8, 16], n: 4, t: 1}\n", "/bin/ei");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->arms[0].command[0], "/bin/ei");
  EXPECT_EQ(g->arms[0].command[5], "8,16");
  EXPECT_TRUE(g->arms[0].ours);
  EXPECT_EQ(g->arms[0].model, "m.gguf");
  ::setenv("EDGE_GRID_TEST_MODEL", "/models/x.gguf", 1);
  auto env =
      parse_grid_spec("arms:\n  - name: e\n    bench: {model: '${EDGE_GRID_TEST_MODEL}'}\n", "ei");
  ASSERT_TRUE(env.ok()) << env.status().to_string();
  EXPECT_EQ(env->arms[0].model, "/models/x.gguf");
  EXPECT_FALSE(
      parse_grid_spec("arms:\n  - name: e\n    bench: {model: '${EDGE_GRID_UNSET_NAME}'}\n", "ei")
          .ok());
}

// The grid files kept in bench/grids/ must stay readable (paths from the environment).
TEST(GridTest, KeptGridFilesParse) {
  for (const char* v : {"LLAMA_BENCH", "IK_BENCH", "LLAMA_SERVER", "LLAMA_QUANTIZE", "LLAMA_CLI",
                        "MODELS", "MODEL", "DATA", "PROMPTS"})
    ::setenv(v, "/x", 0);
  int files = 0;
  for (const auto& e : fs::directory_iterator(std::string(EDGE_SOURCE_DIR) + "/bench/grids")) {
    auto g = load_grid_spec(e.path().string(), "/bin/edge-infer");
    EXPECT_TRUE(g.ok()) << g.status().to_string();
    ++files;
  }
  EXPECT_GE(files, 4);
}

}  // namespace
}  // namespace edge
