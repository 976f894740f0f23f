// End-to-end tests of the edge-infer binary: real processes, real files, exit codes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "formats/gguf.h"

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
    std::string d = testing::TempDir() + "/edge_e2e_" + std::to_string(::getpid());
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

// Runs the binary with args (a shell-quoted string), capturing stdout and stderr.
RunResult run(const std::string& args) {
  std::string out = tmp_dir() + "/stdout.txt", err = tmp_dir() + "/stderr.txt";
  std::string cmd = std::string(EDGE_BINARY) + " " + args + " >" + out + " 2>" + err;
  int rc = std::system(cmd.c_str());
  RunResult r;
  r.code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::string shared_data() {
  const char* e = std::getenv("EDGE_TEST_DATA");
  return e ? e : EDGE_TEST_DATA;
}

const std::string& small_llama() {
  static std::string path = [] {
    std::string p = tmp_dir() + "/small_llama.gguf";
    RunResult r = run("make-model --arch llama --layers 2 --dim 64 --heads 4 --kv-heads 2 --ffn 128 "
                      "--vocab 512 --type f32 -o " + p);
    EXPECT_EQ(r.code, 0) << r.err;
    return p;
  }();
  return path;
}

TEST(Cli, GenerateJsonHasTheAdvertisedFields) {
  RunResult r = run("generate -m " + small_llama() + " --prompt-ids 1,5,9 -n 6 --temp 0 --json --ignore-eos");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prompt_ids"], nlohmann::json({1, 5, 9}));
  EXPECT_EQ(j["generated_ids"].size(), 6u);
  EXPECT_TRUE(j["text"].is_string());
  EXPECT_TRUE(j["timings"].is_object());
}

TEST(Cli, Stories260KGreedyAndLogitsMatchReference) {
  std::string model = shared_data() + "/stories260K/stories260K.bin";
  auto ref = nlohmann::json::parse(slurp(shared_data() + "/stories260K/greedy_p1.json"));
  std::string ids;
  for (auto& v : ref["prompt"]) ids += (ids.empty() ? "" : ",") + std::to_string(v.get<int>());
  size_t n_prompt = ref["prompt"].size();
  size_t n_gen = ref["greedy"].size();
  RunResult g = run("generate -m " + model + " --prompt-ids " + ids + " -n " + std::to_string(n_gen) +
                    " --temp 0 --json");
  ASSERT_EQ(g.code, 0) << g.err;
  auto gj = nlohmann::json::parse(g.out);
  EXPECT_EQ(gj["generated_ids"], ref["greedy"]) << "prompt length " << n_prompt;
  RunResult l = run("logits -m " + model + " --prompt-ids " + ids);
  ASSERT_EQ(l.code, 0) << l.err;
  auto lj = nlohmann::json::parse(l.out);
  ASSERT_EQ(lj["logits"].size(), ref["first_logits"].size());
  for (size_t i = 0; i < lj["logits"].size(); ++i)
    ASSERT_NEAR(lj["logits"][i].get<double>(), ref["first_logits"][i].get<double>(), 1e-4) << i;
}

// Speculative decoding with prompt-lookup drafts gives llama2.c's own greedy tokens too, and
// reports what it drafted; random sampling says why it is not used.
TEST(Cli, SpeculativeGenerateGivesTheReferenceGreedyTokens) {
  const std::string model = shared_data() + "/stories260K/stories260K.bin";
  for (const char* file : {"greedy_p1.json", "greedy_bos.json"}) {
    auto ref = nlohmann::json::parse(slurp(shared_data() + "/stories260K/" + file));
    std::string ids;
    for (auto& v : ref["prompt"]) ids += (ids.empty() ? "" : ",") + std::to_string(v.get<int>());
    RunResult g = run("generate -m " + model + " --prompt-ids " + ids + " -n " +
                      std::to_string(ref["greedy"].size()) + " --temp 0 --json --spec ngram");
    ASSERT_EQ(g.code, 0) << g.err;
    auto j = nlohmann::json::parse(g.out);
    EXPECT_EQ(j["generated_ids"], ref["greedy"]) << file;
    ASSERT_TRUE(j["speculative"].is_object()) << g.out;
    EXPECT_EQ(j["speculative"]["drafter"], "ngram");
    EXPECT_GE(j["speculative"]["tokens_per_pass"].get<double>(), 1.0);
  }
  // Sampling speculates too (the rejection rule; its distribution is tested in
  // tests/runtime/speculative_test.cpp).
  RunResult hot = run("generate -m " + model + " --prompt-ids 1 -n 40 --temp 0.8 --seed 3 --json --spec ngram");
  ASSERT_EQ(hot.code, 0) << hot.err;
  auto h = nlohmann::json::parse(hot.out);
  EXPECT_EQ(h["generated_ids"].size(), 40u);
  EXPECT_EQ(h["speculative"]["drafter"], "ngram") << hot.out;
  EXPECT_TRUE(h["speculative"].contains("verify_cost"));
}

TEST(Cli, TokenizeVocabTestMatchesOutFile) {
  std::string base = shared_data() + "/tokenizer/ggml-vocab-llama-spm.gguf";
  RunResult r = run("tokenize -m " + base + " --vocab-test " + base + ".inp");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, slurp(base + ".out"));
}

TEST(Cli, InspectNamesArchitectureAndTensors) {
  RunResult r = run("inspect " + small_llama());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("llama"), std::string::npos);
  EXPECT_NE(r.out.find("blk.1.attn_q.weight"), std::string::npos);
}

// Our own pre-packed GGUF (type ids 1000+) inspects like any other.
TEST(Cli, InspectReadsAPrePackedFile) {
  const std::string packed = tmp_dir() + "/inspect_w4a8.gguf";
  ASSERT_EQ(run("quantize --type w4a8 " + small_llama() + " " + packed).code, 0);
  RunResult r = run("inspect " + packed);
  std::remove(packed.c_str());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("blk.1.attn_q.weight"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("w4s_g128"), std::string::npos) << r.out;
}

// --- bad input: a clear error naming the problem, non-zero exit, no crash -----------

void expect_clean_failure(const RunResult& r, const std::string& must_mention) {
  EXPECT_NE(r.code, 0);
  EXPECT_LT(r.code, 128) << "killed by a signal: " << r.err;
  EXPECT_NE(r.err.find("error"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(must_mention), std::string::npos) << "stderr: " << r.err;
}

TEST(CliBadInput, TruncatedGguf) {
  std::string bytes = slurp(small_llama());
  for (size_t cut : {size_t(3), size_t(20), size_t(200), bytes.size() / 2, bytes.size() - 1}) {
    std::string p = tmp_dir() + "/truncated.gguf";
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(cut));
    expect_clean_failure(run("generate -m " + p + " --prompt-ids 1 -n 1"), "truncated.gguf");
  }
}

TEST(CliBadInput, WrongMagic) {
  std::string bytes = slurp(small_llama());
  bytes[0] = 'X';
  std::string p = tmp_dir() + "/badmagic.gguf";
  std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  RunResult r = run("generate -m " + p + " --prompt-ids 1 -n 1");
  EXPECT_NE(r.code, 0);
  EXPECT_LT(r.code, 128);
}

TEST(CliBadInput, UnknownArchitecture) {
  GgufWriter w;
  w.set_string("general.architecture", "frobnicator");
  w.set_u32("frobnicator.block_count", 1);
  std::string p = tmp_dir() + "/unknown_arch.gguf";
  ASSERT_TRUE(w.write(p).ok());
  expect_clean_failure(run("generate -m " + p + " --prompt-ids 1 -n 1"), "frobnicator");
}

TEST(CliBadInput, PromptLongerThanContext) {
  expect_clean_failure(run("generate -m " + small_llama() + " --ctx 4 --prompt-ids 1,2,3,4,5,6 -n 1"),
                       "context");
}

TEST(CliBadInput, TokenIdOutOfRange) {
  expect_clean_failure(run("logits -m " + small_llama() + " --prompt-ids 1,99999"), "99999");
  expect_clean_failure(run("generate -m " + small_llama() + " --prompt-ids 1,-3 -n 1"), "-3");
}

TEST(CliBadInput, MissingModelFile) {
  expect_clean_failure(run("generate -m /nonexistent/model.gguf --prompt-ids 1 -n 1"), "/nonexistent/model.gguf");
}

TEST(Cli, UnknownCommandIsAnErrorEvenWithHelp) {
  for (const char* args : {"nosuch --help", "nosuch", "genrate -n 3"}) {
    const RunResult r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("unknown command"), std::string::npos) << args << ": " << r.err;
    EXPECT_NE(r.err.find("generate"), std::string::npos) << r.err;  // lists the real ones
  }
  EXPECT_EQ(run("generate --help").code, 0);
  EXPECT_EQ(run("--help").code, 0);
}

// `pipeline plan`: JSON per stage with the verified hash and the memory plan's bytes;
// exit 3 naming the stage when the limit is too small; a changed artifact is refused.
TEST(Cli, PipelinePlanVerifiesArtifactsAndAdmitsOrRefuses) {
  const std::string model = tmp_dir() + "/pipeline_lm.gguf";
  fs::copy_file(small_llama(), model, fs::copy_options::overwrite_existing);
  const RunResult hash = run("pipeline plan /dev/null");  // an empty file: refused, not a crash
  EXPECT_NE(hash.code, 0);
  EXPECT_NE(hash.err.find("pipeline"), std::string::npos) << hash.err;
  std::string sha;
  {
    FILE* p = popen(("sha256sum " + model).c_str(), "r");
    char buf[65] = {};
    ASSERT_EQ(std::fread(buf, 1, 64, p), 64u);
    pclose(p);
    sha = buf;
  }
  const std::string file = tmp_dir() + "/p.yaml";
  auto write = [&](const std::string& h) {
    std::ofstream(file) << "pipeline: chat\nstages:\n  - name: lm\n    kind: lm\n    contract: text.generate@1\n"
                        << "    artifacts: [{role: model, path: pipeline_lm.gguf, sha256: " << h << "}]\n"
                        << "routes: [input.prompt -> lm.prompt, lm.text -> output.text]\n";
  };
  write(sha);
  RunResult r = run("pipeline plan " + file + " --ctx 256");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["admitted"].get<bool>());
  EXPECT_EQ(j["stages"][0]["artifacts"][0]["sha256"], sha);
  EXPECT_GT(j["stages"][0]["reserved_bytes"].get<int64_t>(), 0);
  r = run("pipeline plan " + file + " --memory-limit 64KiB");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("stage 'lm'"), std::string::npos) << r.err;
  // run: one request through the graph, events numbered, state with the ledger.
  r = run("pipeline run " + file + " --ctx 128 -n 4 --input prompt=ids:1,2,3 --events");
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  int text_events = 0;
  nlohmann::json state;
  while (std::getline(lines, line)) {
    const auto ev = nlohmann::json::parse(line);
    if (ev.contains("state")) {
      state = ev["state"];
    } else {
      EXPECT_EQ(ev["epoch"], 1) << line;
      ++text_events;
    }
  }
  EXPECT_EQ(text_events, 5);  // 4 tokens + the terminal event
  EXPECT_EQ(state["ledger"]["stages"][0]["stage"], "lm");
  EXPECT_EQ(run("pipeline run " + file + " --input nope=x").code, 2);
  // memory --pipeline: each stage's reservation beside its measured bytes.
  r = run("memory --pipeline " + file + " --ctx 128 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto mem = nlohmann::json::parse(r.out);
  EXPECT_EQ(mem["ledger"]["stages"][0]["stage"], "lm");
  EXPECT_GT(mem["ledger"]["stages"][0]["reserved_bytes"].get<int64_t>(), 0);
  EXPECT_GT(mem["stages"][0]["loaded_rss_bytes"].get<int64_t>(), 0);
  r = run("memory --pipeline " + file + " --ctx 128");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("pipeline chat: ledger"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("in_process cpu"), std::string::npos) << r.out;
  r = run("memory --pipeline " + file + " --memory-limit 64KiB");
  EXPECT_EQ(r.code, 3) << r.err;  // refused: does not fit
  EXPECT_NE(r.err.find("'lm'"), std::string::npos) << r.err;
  write(std::string(64, 'a'));
  r = run("pipeline plan " + file);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("differs from the declared artifact hash"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace edge
