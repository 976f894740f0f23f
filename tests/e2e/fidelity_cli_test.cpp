// `edge-infer fidelity` end to end: JSON fields and provenance, and exit code 2 for
// mismatched vocabularies and bad prompt files.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace edge {
namespace {

struct CliRun {
  int code = -1;
  std::string out, err;
};

std::string dir() {
  static const std::string d = [] {
    std::string p = ::testing::TempDir() + "/edge_fidelity_cli_" + std::to_string(::getpid());
    std::filesystem::create_directories(p);
    return p;
  }();
  return d;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CliRun run(const std::string& args) {
  const std::string out = dir() + "/out.txt", err = dir() + "/err.txt";
  const int rc = std::system((std::string(EDGE_BINARY) + " " + args + " >" + out + " 2>" + err).c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : 128, slurp(out), slurp(err)};
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

class FidelityCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(run("make-model -o " + dir() + "/a.gguf").code, 0);
    ASSERT_EQ(run("make-model --vocab 600 -o " + dir() + "/v600.gguf").code, 0);
    ASSERT_EQ(run("quantize --type w8 -t 2 " + dir() + "/a.gguf " + dir() + "/a_w8.gguf").code, 0);
    write(dir() + "/prompts.txt", "1,2,3,4,5,6\nonce upon a time\n");
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir()); }
};

TEST_F(FidelityCli, W8CopyReportsJson) {
  CliRun r = run("fidelity -t 2 --greedy-tokens 4 --ref " + dir() + "/a.gguf --test " + dir() +
              "/a_w8.gguf --prompts " + dir() + "/prompts.txt");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["prompts"], 2);
  EXPECT_GE(j["positions"].get<int>(), 7);
  EXPECT_GT(j["kl_mean"].get<double>(), 0.0);
  EXPECT_LT(j["kl_mean"].get<double>(), 1e-2);
  EXPECT_GE(j["kl_p99"].get<double>(), j["kl_mean"].get<double>());
  EXPECT_GE(j["kl_max"].get<double>(), j["kl_p99"].get<double>());
  EXPECT_GE(j["top1_agreement"].get<double>(), 0.9);
  for (const char* k : {"greedy_match_fraction", "greedy_identical", "ref", "test"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_TRUE(j["provenance"].contains("machine"));
  EXPECT_EQ(j["provenance"]["test"]["architecture"], "llama");
}

TEST_F(FidelityCli, RefusesMismatchedVocabAndBadPrompts) {
  CliRun r = run("fidelity --ref " + dir() + "/a.gguf --test " + dir() + "/v600.gguf --prompts " +
              dir() + "/prompts.txt");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("vocabulary sizes differ"), std::string::npos) << r.err;
  write(dir() + "/bad.txt", "1,2\n3,99999\n");
  r = run("fidelity --ref " + dir() + "/a.gguf --test " + dir() + "/a.gguf --prompts " + dir() +
          "/bad.txt");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace edge
