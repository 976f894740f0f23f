// The fixture of the pipeline process tests: a tiny random model, pinned, and a one-stage
// graph of it placed in process or in a worker of our own binary.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "convert/random_model.h"
#include "pipeline/graph/artifact.h"
#include "pipeline/graph/executor.h"

namespace edge::pipeline {

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
  PipelineSpec spec(const std::string& placement, int capacity = 1) {
    auto p = parse_pipeline(
        "stages:\n  - name: lm\n    kind: lm\n    contract: text.generate@1\n    placement: " +
            placement + "\n    capacity: " + std::to_string(capacity) +
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

}  // namespace edge::pipeline
