// Helpers for model tests: temporary directories, random models, logits comparison.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "convert/random_model.h"
#include "model/forward.h"
#include "model/model.h"

namespace edge::testing {

// A JSON file (config.json of a written checkpoint) read or rewritten whole.
inline nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

inline void write_json(const std::string& path, const nlohmann::json& j) { std::ofstream(path) << j.dump(2); }

inline std::string temp_dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("edge_model_test_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

inline std::unique_ptr<Model> load_or_die(const std::string& path, int threads = 2,
                                          const std::string& activations = "auto") {
  LoadOptions o;
  o.n_threads = threads;
  o.activations = activations;
  auto m = Model::load(path, o);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(m).value() : nullptr;
}

// Largest |a-b| / (1e-2 + max|b|): relative to the logits' own scale.
inline double rel_diff(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  double scale = 1e-2, worst = 0;
  for (float v : b) scale = std::max(scale, double(std::abs(v)));
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - b[i]));
  return worst / scale;
}

inline std::vector<int32_t> test_tokens(int n, int32_t n_vocab, uint32_t seed = 7) {
  std::vector<int32_t> t;
  uint32_t s = seed;
  for (int i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    t.push_back(static_cast<int32_t>(s % static_cast<uint32_t>(n_vocab)));
  }
  return t;
}

// All logits [n, n_vocab] of one batched forward from an empty state.
inline std::vector<float> prefill_logits(const Model& m, const std::vector<int32_t>& toks) {
  auto st = InferenceState::create(m, static_cast<int64_t>(toks.size()) + 4);
  EXPECT_TRUE(st.ok());
  auto r = st->forward(toks, true);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::vector<float>(r->begin(), r->end()) : std::vector<float>();
}

// Greedy continuation of `prompt`: `steps` argmax tokens, one forward per token.
inline std::vector<int32_t> greedy(const Model& m, const std::vector<int32_t>& prompt, int steps) {
  auto st = InferenceState::create(m, static_cast<int64_t>(prompt.size()) + steps);
  EXPECT_TRUE(st.ok());
  auto r = st->forward(prompt);
  std::vector<int32_t> out;
  while (r.ok() && static_cast<int>(out.size()) < steps) {
    out.push_back(static_cast<int32_t>(std::max_element(r->begin(), r->end()) - r->begin()));
    r = st->forward(std::span<const int32_t>(&out.back(), 1));
  }
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return out;
}

}  // namespace edge::testing
