// End-to-end tests of plan / memory / bench-init / measure-rss and of generate's refusal
// before loading: real processes, exit codes, RSS read from /proc.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace edge {
namespace {
namespace fs = std::filesystem;

struct RunResult {
  int code = -1;
  std::string out;
  std::string err;
};

std::string tmp_dir() {
  static std::string dir = [] {
    std::string d = testing::TempDir() + "/edge_mem_e2e_" + std::to_string(::getpid());
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

RunResult run(const std::string& args) {
  const std::string out = tmp_dir() + "/stdout.txt", err = tmp_dir() + "/stderr.txt";
  const std::string cmd = std::string(EDGE_BINARY) + " " + args + " >" + out + " 2>" + err;
  const int rc = std::system(cmd.c_str());
  RunResult r;
  r.code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

nlohmann::json parse(const std::string& s) {
  try {
    return nlohmann::json::parse(s);
  } catch (const nlohmann::json::exception& e) {
    ADD_FAILURE() << "not JSON: " << e.what() << "\n" << s;
    return {};
  }
}

// F32 llama of about 150 MB: large next to what a refused process may touch.
const std::string& big_model() {
  static std::string path = [] {
    std::string p = tmp_dir() + "/big.gguf";
    RunResult r = run("make-model --layers 4 --dim 768 --heads 8 --kv-heads 4 --ffn 3072 --vocab 4096 --type f32 -o " + p);
    EXPECT_EQ(r.code, 0) << r.err;
    return p;
  }();
  return path;
}

const std::string& mid_model() {
  static std::string path = [] {
    std::string p = tmp_dir() + "/mid.gguf";
    RunResult r = run("make-model --layers 4 --dim 256 --heads 4 --kv-heads 4 --ffn 768 --vocab 2048 --ctx 4096 --type f16 -o " + p);
    EXPECT_EQ(r.code, 0) << r.err;
    return p;
  }();
  return path;
}

TEST(MemoryCli, PlanPrintsCategoriesAndAdmits) {
  RunResult r = run("plan -m " + mid_model() + " --ctx 1024 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = parse(r.out);
  EXPECT_TRUE(j["admitted"].get<bool>());
  // kv f16: 4 layers * 64 blocks * 2 * 16 * (256 * 2) bytes.
  EXPECT_EQ(j["bytes"]["kv"].get<int64_t>(), 4LL * 64 * 2 * 16 * 512);
  for (const char* c : {"weights", "weights_mapped", "kv", "scratch", "rope", "tokenizer", "runtime"})
    EXPECT_TRUE(j["bytes"].contains(c)) << c;
  RunResult t = run("plan -m " + mid_model() + " --ctx 1024");
  EXPECT_EQ(t.code, 0);
  EXPECT_NE(t.out.find("admitted"), std::string::npos);
}

TEST(MemoryCli, PlanRefusesNamingTheLargestCategory) {
  RunResult r = run("plan -m " + mid_model() + " --ctx 4096 --kv-type f32 --memory-limit 4MiB");
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("memory plan refused"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Largest category: kv"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("over by"), std::string::npos) << r.err;
  RunResult bad = run("plan -m " + mid_model() + " --ctx 10 --memory-limit 12XB");
  EXPECT_EQ(bad.code, 2);
  RunResult budget = run("plan -m " + mid_model() + " --ctx 4096 --kv-budget 1MiB");
  EXPECT_EQ(budget.code, 3);
  EXPECT_NE(budget.err.find("smaller than one request"), std::string::npos) << budget.err;
}

// K and V of their own types: the plan charges each cache its own row bytes (q4: 4-bit
// codes of 64-wide heads, one f16 scale per 32), the filled cache holds exactly that, and
// a bad name is refused naming it.
TEST(MemoryCli, SeparateKAndVTypesArePlannedAndChargedExactly) {
  RunResult r = run("plan -m " + mid_model() + " --ctx 1024 --kv-type-k q4 --kv-type-v f16 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = parse(r.out);
  EXPECT_EQ(j["kv_type"], "q4/f16");
  // 4 layers * 64 blocks * 16 positions * (K: 256 / 2 + 2 * 256 / 32, V: 256 * 2) bytes.
  EXPECT_EQ(j["bytes"]["kv"].get<int64_t>(), 4LL * 64 * 16 * ((128 + 16) + 512));
  RunResult m = run("memory -m " + mid_model() + " --ctx 1024 --kv-type q4 --fill --json");
  ASSERT_EQ(m.code, 0) << m.err;
  nlohmann::json mj = parse(m.out);
  EXPECT_EQ(mj["ledger"]["kv"].get<int64_t>(), 4LL * 64 * 16 * 2 * (128 + 16)) << mj.dump(2);
  RunResult g = run("generate -m " + mid_model() + " -n 4 --kv-type-k q4 --kv-type-v q8 --json");
  EXPECT_EQ(g.code, 0) << g.err;
  RunResult bad = run("plan -m " + mid_model() + " --ctx 1024 --kv-type-v q3");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("'q3'"), std::string::npos) << bad.err;
}

TEST(MemoryCli, CtxAutoFitsTheLimit) {
  RunResult r = run("plan -m " + mid_model() + " --ctx auto --kv-type f32 --memory-limit 40MiB --json");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = parse(r.out);
  EXPECT_TRUE(j["ctx_auto"].get<bool>());
  EXPECT_LE(j["total"].get<int64_t>(), 40LL << 20);
  EXPECT_GT(j["ctx"].get<int64_t>(), 16);
  EXPECT_LT(j["ctx"].get<int64_t>(), 4096);
}

// generate under a tiny --memory-limit is refused from the metadata: the weights are
// never read, so the process's file-backed RSS stays far below the model's size.
TEST(MemoryCli, GenerateRefusedBeforeAnyWeightIsRead) {
  const std::string model = big_model();
  const int64_t model_bytes = static_cast<int64_t>(fs::file_size(model));
  ASSERT_GT(model_bytes, 100LL << 20);
  // Drop the file from the page cache is not possible unprivileged; RssFile counts only
  // pages this process maps and touches, which is what the claim is about.
  RunResult r = run("measure-rss --interval-ms 2 -- " + std::string(EDGE_BINARY) + " generate -m " + model +
                    " -p hello -n 2 --memory-limit 16MiB");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = parse(r.out);
  EXPECT_EQ(j["exit_code"].get<int>(), 3) << r.err;
  EXPECT_NE(r.err.find("memory plan refused"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Largest category: weights_mapped"), std::string::npos) << r.err;
  // About what reading the metadata alone costs (plan), far below the weights' bytes.
  RunResult p = run("measure-rss --interval-ms 2 -- " + std::string(EDGE_BINARY) + " plan -m " + model +
                    " --memory-limit 16MiB");
  nlohmann::json jp = parse(p.out);
  const int64_t gen_file = j["peak"]["rss_file"].get<int64_t>();
#if !defined(__SANITIZE_ADDRESS__)
  // An ASan binary's own image and shadow mappings are larger than this small model.
  EXPECT_LT(gen_file, model_bytes / 2) << j.dump();
#endif
  EXPECT_LT(gen_file, jp["peak"]["rss_file"].get<int64_t>() + (16LL << 20)) << j.dump() << jp.dump();
  // The same command with room loads and runs (the refusal was the limit's doing).
  RunResult ok = run("generate -m " + model + " -p hello -n 2 --ctx 64");
  EXPECT_EQ(ok.code, 0) << ok.err;
}

// serve plans the served configuration (sequences, KV type, budget) before loading and
// refuses, naming the largest category, instead of being killed while loading.
TEST(MemoryCli, ServeRefusedBeforeLoading) {
  RunResult r = run("serve -m " + mid_model() + " --port 0 --max-seqs 64 --ctx 4096 --memory-limit 64MiB");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("memory plan refused"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Largest category: kv"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("listening"), std::string::npos) << r.out;
}

TEST(MemoryCli, MemoryLedgerAccountsForRssAnon) {
  RunResult r = run("memory -m " + mid_model() + " --ctx 2048 --kv-type f32 --fill --json");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = parse(r.out);
  EXPECT_TRUE(j["filled"].get<bool>());
  EXPECT_EQ(j["n_filled"].get<int64_t>(), 2048);
  EXPECT_GT(j["ledger"]["kv"].get<int64_t>(), 0);
  EXPECT_GT(j["ledger"]["weights_mapped"].get<int64_t>(), 0);
  EXPECT_GT(j["mapped_weights"]["resident"].get<int64_t>(), 0);
  // Ledger categories sum to the anonymous total reported.
  int64_t anon = 0;
  for (auto& [k, v] : j["ledger"].items())
    if (k != "weights_mapped") anon += v.get<int64_t>();
  EXPECT_EQ(anon, j["ledger_anon_total"].get<int64_t>());
#if !defined(__SANITIZE_ADDRESS__)
  // (Under ASan, shadow memory and the quarantine are RssAnon that no ledger can own.)
  EXPECT_LT(std::abs(j["unattributed_pct_of_rss_anon"].get<double>()), 5.0) << j.dump(2);
#endif
}

TEST(MemoryCli, BenchInitReportsReadyAndPeaks) {
  RunResult r = run("bench-init -m " + mid_model() + " --ctx 512 --context-len 256");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = parse(r.out);
  const double ready = j["ready_s"].get<double>();
  EXPECT_GT(ready, 0.0);
  EXPECT_LT(ready, 120.0);
  EXPECT_GT(j["peak_load"]["rss_anon"].get<int64_t>(), 0);
  EXPECT_GE(j["peak"]["rss_anon_file"].get<int64_t>(), j["settled"]["rss_anon"].get<int64_t>());
  EXPECT_EQ(j["filled"]["tokens"].get<int64_t>(), 256);
  ASSERT_TRUE(j["phases"].is_array());
  std::vector<std::string> names;
  double last_t = 0;
  for (const auto& p : j["phases"]) {
    names.push_back(p["name"]);
    EXPECT_GE(p["t_s"].get<double>(), last_t);
    last_t = p["t_s"].get<double>();
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "loaded"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "first_token"), names.end());
  EXPECT_TRUE(j["provenance"].contains("machine"));
  EXPECT_TRUE(j["provenance"].contains("model"));
}

}  // namespace
}  // namespace edge
