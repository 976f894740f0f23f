// The graphs shipped under pipelines/ run as shipped, from the demo models: every file passes
// `pipeline plan` (each demo:NAME artifact resolved and pinned to its hash) and `pipeline run`
// with the inputs its header names; the text and speech graphs pass `probe --pipeline`
// (the external server and the worker vocoder included). A new file in the folder without a
// row here fails the test, so nothing ships untried. Each test writes the demo models into
// its own cache folder (XDG_CACHE_HOME): tests run in parallel.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

const std::string kDir = std::string(EDGE_SOURCE_DIR) + "/pipelines/";

struct RunResult {
  int code = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A folder of the running test's own.
fs::path test_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info->name();
  for (char& c : name)
    if (c == '/') c = '_';
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("edge_shipped_" + std::to_string(::getpid()) + "_" + name);
  fs::create_directories(dir);
  return dir;
}

// The binary with `args`, the demo models cached in the test's folder.
RunResult run(const std::string& args) {
  const fs::path dir = test_dir();
  const std::string out = (dir / "stdout").string(), err = (dir / "stderr").string();
  const std::string cmd = "XDG_CACHE_HOME=" + (dir / "cache").string() + " " + EDGE_BINARY + " " +
                          args + " >" + out + " 2>" + err;
  const int rc = std::system(cmd.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc), slurp(out), slurp(err)};
}

struct Shipped {
  std::string inputs;                // pipeline run's arguments
  bool text = false, audio = false;  // what reaches the graph's outputs
  bool probe = false;                // probe --pipeline runs on it
};

// One row per shipped file: the inputs of its header's `pipeline run` line.
const std::map<std::string, Shipped>& shipped() {
  static const std::map<std::string, Shipped> m = {
      {"text-worker.yaml", {"--input 'prompt=Once upon a time' -n 8", true, false, true}},
      {"text-external.yaml", {"--input 'prompt=Once upon a time' -n 8", true, false, true}},
      {"speech.yaml", {"--input 'text=Hello there.'", false, true, true}},
      {"vision-language.yaml",
       {"--input image=image:" + kDir +
            "media/gradient.png --input 'prompt=What is in the picture?' -n 8",
        true, false, false}},
      {"vision-language-external.yaml",
       {"--input image=image:" + kDir +
            "media/gradient.png --input 'prompt=What is in the picture?' -n 8",
        true, false, true}},
      {"audio-language.yaml",
       {"--input pcm=wav:" + kDir + "media/tone.wav --input 'prompt=What do you hear?' -n 8", true,
        false, false}},
      {"voice-note.yaml",
       {"--input pcm=wav:" + kDir + "media/tone.wav --input 'prompt=Answer the note.' -n 8", true,
        true, false}},
  };
  return m;
}

TEST(ShippedPipelines, EveryFileInTheFolderHasARow) {
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(kDir))
    if (e.path().extension() == ".yaml") files.insert(e.path().filename().string());
  for (const std::string& f : files) EXPECT_TRUE(shipped().count(f)) << f << " ships untested";
  for (const auto& [f, s] : shipped()) EXPECT_TRUE(files.count(f)) << f << " is not shipped";
}

class ShippedPipeline : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedPipeline, PlansWithItsDemoArtifactsPinnedAndRuns) {
  const std::string file = kDir + GetParam();
  const Shipped& s = shipped().at(GetParam());
  const RunResult plan = run("pipeline plan " + file);
  ASSERT_EQ(plan.code, 0) << plan.err;
  const nlohmann::json j = nlohmann::json::parse(plan.out);
  EXPECT_TRUE(j["admitted"].get<bool>());
  for (const auto& stage : j["stages"])
    for (const auto& a : stage["artifacts"]) {
      EXPECT_EQ(a["symbol"].get<std::string>().rfind("demo:", 0), 0u) << a.dump();
      EXPECT_EQ(a["sha256"].get<std::string>().size(), 64u);
      EXPECT_TRUE(fs::exists(a["path"].get<std::string>())) << a.dump();
    }

  const std::string wav = (test_dir() / "out.wav").string(),
                    archive = (test_dir() / "archive").string();
  const RunResult got = run("pipeline run " + file + " " + s.inputs + " --events --archive " +
                            archive + (s.audio ? " --wav " + wav : ""));
  ASSERT_EQ(got.code, 0) << got.err;
  if (s.audio) {
    EXPECT_GT(fs::file_size(wav), 44u);
  }
  // The evidence archive: the file, the events, and per stage what ran where, on what.
  EXPECT_EQ(slurp(archive + "/pipeline.yaml"), slurp(file));
  EXPECT_FALSE(slurp(archive + "/events.jsonl").empty());
  EXPECT_EQ(fs::exists(archive + "/text.txt"), s.text);
  EXPECT_EQ(fs::exists(archive + "/audio.wav"), s.audio);
  const nlohmann::json rec = nlohmann::json::parse(slurp(archive + "/run.json"));
  EXPECT_EQ(rec["result"], "ok");
  EXPECT_TRUE(rec["provenance"].contains("commit"));
  for (const auto& st : rec["state"]["stages"]) {
    EXPECT_EQ(st["requested_device"], "cpu") << st.dump();
    EXPECT_EQ(st["actual_device"], "cpu") << st.dump();
    EXPECT_EQ(st["backend_version"].get<std::string>().rfind("edge-infer ", 0), 0u) << st.dump();
    EXPECT_GT(st["reserved_bytes"].get<int64_t>(), 0) << st.dump();
    for (const auto& art : st["artifacts"]) EXPECT_TRUE(art["verified"].get<bool>()) << art.dump();
  }
  bool text = false, audio = false;
  std::istringstream lines(got.out);
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json e = nlohmann::json::parse(line);
    if (e.contains("state")) continue;  // the runtime's state, last
    if (e.contains("error")) ADD_FAILURE() << line;
    text |= e.value("output", "") == "text" && e.contains("text");
    audio |= e.value("output", "") == "audio" && e.value("samples", 0) > 0;
  }
  EXPECT_EQ(text, s.text) << got.out;
  EXPECT_EQ(audio, s.audio) << got.out;
}

class ProbedPipeline : public ::testing::TestWithParam<std::string> {};

TEST_P(ProbedPipeline, PassesTheProbes) {
  ASSERT_TRUE(shipped().at(GetParam()).probe);
  const RunResult r = run("probe --pipeline " + kDir + GetParam());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["passed"].get<bool>()) << r.out;
  EXPECT_EQ(j["failed"].get<int>(), 0);
  std::set<std::string> names;
  for (const auto& c : j["checks"]) names.insert(c["name"].get<std::string>());
  if (GetParam() == "text-external.yaml" || GetParam() == "vision-language-external.yaml") {  // killed by pid
    EXPECT_TRUE(names.count("text.server_killed")) << r.out;
    EXPECT_TRUE(names.count("text.after_server_killed")) << r.out;
  }
  if (GetParam() == "text-worker.yaml") {
    EXPECT_TRUE(names.count("text.worker_killed")) << r.out;
  }
}

// The media reach the language model: the same prompt with the image gives other tokens than
// without it (the text-worker graph runs the same demo model, greedy, on the text alone).
TEST(ShippedPipelines, TheImageChangesWhatTheModelSays) {
  auto ids = [](const RunResult& r) {
    std::vector<int32_t> out;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      const nlohmann::json e = nlohmann::json::parse(line);
      if (e.value("output", "") == "tokens" && e.contains("tokens"))
        for (const auto& t : e["tokens"]) out.push_back(t.get<int32_t>());
    }
    return out;
  };
  const std::string prompt = "--input 'prompt=What is in the picture?' -n 8 --events";
  const RunResult alone = run("pipeline run " + kDir + "text-worker.yaml " + prompt);
  const RunResult seen =
      run("pipeline run " + kDir + "vision-language.yaml --input image=image:" + kDir +
          "media/gradient.png " + prompt);
  ASSERT_EQ(alone.code, 0) << alone.err;
  ASSERT_EQ(seen.code, 0) << seen.err;
  ASSERT_EQ(ids(alone).size(), 8u);
  ASSERT_EQ(ids(seen).size(), 8u);
  EXPECT_NE(ids(alone), ids(seen));
}

// A shipped text graph asking for the iGPU: under placement_policy require the worker stage
// is refused by plan and the external one fails at start, each naming the requested and the
// actual placement; under prefer both run on the cpu and the state records the difference.
TEST(ShippedPipelines, PlacementPolicyRequireRefusesAndPreferRecords) {
  auto variant = [](const std::string& file, const std::string& policy) {
    std::string text = slurp(kDir + file);
    const std::string dev = "    device: cpu\n";
    text.replace(text.find(dev), dev.size(),
                 "    device: igpu\n    placement_policy: " + policy + "\n");
    const std::string out = (test_dir() / (policy + "-" + file)).string();
    std::ofstream(out) << text;
    return out;
  };
  const RunResult worker = run("pipeline plan " + variant("text-worker.yaml", "require"));
  EXPECT_NE(worker.code, 0);
  EXPECT_NE(worker.err.find("requested placement igpu (worker)"), std::string::npos) << worker.err;
  EXPECT_NE(worker.err.find("on the cpu only"), std::string::npos) << worker.err;
  const RunResult ext =
      run("pipeline run " + variant("text-external.yaml", "require") + " --input prompt=hi -n 2");
  EXPECT_NE(ext.code, 0);
  EXPECT_NE(ext.err.find("requested placement igpu"), std::string::npos) << ext.err;
  EXPECT_NE(ext.err.find("reports cpu ("), std::string::npos) << ext.err;
  for (const char* file : {"text-worker.yaml", "text-external.yaml"}) {
    const RunResult r =
        run("pipeline run " + variant(file, "prefer") + " --input prompt=hi -n 2 --events");
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string last = r.out.substr(r.out.rfind("{\"state\""));
    const nlohmann::json st = nlohmann::json::parse(last)["state"]["stages"][0];
    EXPECT_EQ(st["requested_device"], "igpu") << last;
    EXPECT_EQ(st["actual_device"], "cpu") << last;
    EXPECT_EQ(st["placement_note"], "requested igpu, runs on cpu (placement_policy prefer)")
        << last;
  }
}

std::string test_name(const ::testing::TestParamInfo<std::string>& i) {
  std::string n = i.param.substr(0, i.param.find('.'));
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Files, ShippedPipeline,
                         ::testing::Values("text-worker.yaml", "text-external.yaml", "speech.yaml",
                                           "vision-language.yaml", "vision-language-external.yaml",
                                           "audio-language.yaml", "voice-note.yaml"),
                         test_name);
// The headers that name `probe --pipeline`: text in a worker and in an external server (with
// and without the vision encoder), and speech with its vocoder in a worker.
INSTANTIATE_TEST_SUITE_P(Files, ProbedPipeline,
                         ::testing::Values("text-worker.yaml", "text-external.yaml", "speech.yaml",
                                           "vision-language-external.yaml"),
                         test_name);

}  // namespace
