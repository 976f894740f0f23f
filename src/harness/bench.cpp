#include "harness/bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>

#include "harness/bandwidth.h"
#include "harness/provenance.h"
#include "model/forward.h"
#include "model/model.h"

namespace edge {
namespace {

using Clock = std::chrono::steady_clock;

struct Sizes {
  uint64_t bytes = 0;
  uint64_t params = 0;
};

Sizes weight_sizes(const Model& m) {
  Sizes s;
  auto add = [&](const TensorView& t) {
    s.bytes += t.nbytes;
    s.params += static_cast<uint64_t>(t.numel());
  };
  const ModelWeights& w = m.weights();
  add(w.token_embd);
  if (w.output.data != w.token_embd.data) add(w.output);
  const ModelConfig& c = m.config();
  for (const LayerWeights& l : w.layers) {
    for (const TensorView* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.router,
                                &l.gate_shexp, &l.up_shexp, &l.down_shexp, &l.ssm_qkv, &l.ssm_z,
                                &l.ssm_alpha, &l.ssm_beta, &l.ssm_out})
      add(*t);
    for (const std::vector<TensorView>* experts : {&l.gate_exps, &l.up_exps, &l.down_exps})
      for (const TensorView& t : *experts) add(t);
    // Norms and biases are F32 vectors held by the model.
    uint64_t small = l.attn_norm.size() + l.ffn_norm.size() + l.bq.size() + l.bk.size() + l.bv.size() +
                     l.q_norm.size() + l.k_norm.size() + l.post_attn_norm.size() + l.post_ffn_norm.size() +
                     l.ssm_conv.size() + l.ssm_dt.size() + l.ssm_a.size() + l.ssm_norm.size();
    s.bytes += small * 4;
    s.params += small;
  }
  s.bytes += static_cast<uint64_t>(c.n_embd) * 4;
  s.params += static_cast<uint64_t>(c.n_embd);
  return s;
}

// The ceiling probe, or nothing (roofline off).
std::optional<BandwidthResult> probe_ceiling(Model& model, const BenchOptions& o) {
  if (o.roofline_bytes == 0) return std::nullopt;
  auto r = measure_read_bandwidth(model.pool(), o.roofline_bytes, std::max(1, o.roofline_passes));
  if (!r) return std::nullopt;
  return *r;
}

// Adds decode's bytes per token, effective GB/s and fraction of the ceiling to a tg record.
void add_roofline(nlohmann::json& r, const DecodeBytes& db, int n_gen, int depth,
                  const BandwidthResult& ceiling) {
  // The mean over the test's positions depth..depth+n_gen-1.
  double bytes = 0;
  for (int p = 0; p < n_gen; ++p) bytes += static_cast<double>(db.at(depth + p));
  bytes /= std::max(1, n_gen);
  const double gbps = bytes * r["avg_ts"].get<double>() / 1e9;
  r["roofline"] = {{"bytes_per_token", static_cast<uint64_t>(bytes)},
                   {"weight_bytes_per_token", db.weights},
                   {"expert_bytes", db.expert_bytes},
                   {"effective_gbps", gbps},
                   {"ceiling_gbps", ceiling.best_gbps},
                   {"fraction_of_ceiling", ceiling.best_gbps > 0 ? gbps / ceiling.best_gbps : 0.0},
                   {"ceiling", ceiling.to_json()}};
}

// One timed run in nanoseconds: pp (n_prompt > 0) or tg (n_gen > 0), from position 0 of
// `st`. The state (KV cache, step buffers) is created once per test and reused by the
// warm-up and every repetition, as llama-bench reuses its context and clears its cache: a
// repetition times the forward passes, not the first touch of fresh memory.
Expected<int64_t> time_one(InferenceState& st, int32_t n_vocab, int n_prompt, int n_gen, int depth,
                           std::mt19937_64& rng) {
  std::uniform_int_distribution<int32_t> tok(0, n_vocab - 1);
  std::vector<int32_t> tokens(std::max({n_prompt, depth, 1}));
  for (auto& t : tokens) t = tok(rng);
  st.reset();
  if (depth > 0) {  // the context the test runs in, untimed
    auto r = st.forward(std::span<const int32_t>(tokens.data(), static_cast<size_t>(depth)));
    if (!r) return r.status();
  }
  tokens.resize(static_cast<size_t>(std::max(n_prompt, 1)));
  auto t0 = Clock::now();
  if (n_prompt > 0) {
    auto r = st.forward(tokens);
    if (!r) return r.status();
  } else {
    int32_t t = tokens[0];
    for (int i = 0; i < n_gen; ++i) {
      auto r = st.forward(std::span<const int32_t>(&t, 1));
      if (!r) return r.status();
      t = tok(rng);  // like llama-bench: the next input is not sampled, so no sampling cost
    }
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

nlohmann::json make_record(const Model& model, const BenchOptions& o, const Sizes& sz, int n_prompt, int n_gen,
                           int depth, const std::vector<int64_t>& ns) {
  const int n_tok = n_prompt > 0 ? n_prompt : n_gen;
  double mean_ns = 0, mean_ts = 0;
  std::vector<double> ts;
  for (int64_t v : ns) {
    mean_ns += static_cast<double>(v);
    ts.push_back(n_tok * 1e9 / static_cast<double>(v));
    mean_ts += ts.back();
  }
  mean_ns /= ns.size();
  mean_ts /= ns.size();
  double var_ns = 0, var_ts = 0;
  for (size_t i = 0; i < ns.size(); ++i) {
    var_ns += std::pow(ns[i] - mean_ns, 2);
    var_ts += std::pow(ts[i] - mean_ts, 2);
  }
  const double denom = ns.size() > 1 ? static_cast<double>(ns.size() - 1) : 1.0;
  nlohmann::json prov = machine_provenance();
  nlohmann::json r = {{"build_commit", prov["commit"]},
                      {"build_number", 0},
                      {"cpu_info", prov["cpu"]},
                      {"gpu_info", ""},
                      {"backends", "CPU"},
                      {"model_filename", model.path()},
                      {"model_type", fmt::format("{} {}", model.config().arch, "edge")},
                      {"model_size", sz.bytes},
                      {"model_n_params", sz.params},
                      {"n_batch", n_prompt > 0 ? n_prompt : 1},
                      {"n_ubatch", n_prompt > 0 ? std::min<int64_t>(n_prompt, o.n_ubatch) : 1},
                      {"n_threads", model.pool().size()},
                      {"type_k", kv_type_name(o.kv_types.k)},
                      {"type_v", kv_type_name(o.kv_types.v)},
                      {"n_gpu_layers", 0},
                      {"use_mmap", true},
                      {"n_prompt", n_prompt},
                      {"n_gen", n_gen},
                      {"n_depth", depth},
                      {"test_time", prov["time"]},
                      {"avg_ns", static_cast<int64_t>(mean_ns)},
                      {"stddev_ns", static_cast<int64_t>(std::sqrt(var_ns / denom))},
                      {"avg_ts", mean_ts},
                      {"stddev_ts", std::sqrt(var_ts / denom)},
                      {"samples_ns", ns},
                      {"samples_ts", ts}};
  r["provenance"] = prov;
  r["provenance"]["engine"] = model_provenance(model);
  return r;
}

}  // namespace

uint64_t DecodeBytes::at(int64_t pos) const {
  uint64_t b = weights + kv_per_position * static_cast<uint64_t>(pos + 1);
  for (int32_t w : sliding_windows)
    b += kv_sliding_window_bytes * static_cast<uint64_t>(std::min<int64_t>(pos + 1, w));
  return b;
}

DecodeBytes decode_bytes(const Model& model, KvTypes kv_types) {
  DecodeBytes d;
  const ModelWeights& w = model.weights();
  const ModelConfig& c = model.config();
  d.weights = w.output.nbytes + w.token_embd.nbytes / std::max<int64_t>(1, c.n_vocab);
  for (const LayerWeights& l : w.layers) {
    for (const TensorView* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.router,
                                &l.gate_shexp, &l.up_shexp, &l.down_shexp, &l.ssm_qkv, &l.ssm_z,
                                &l.ssm_alpha, &l.ssm_beta, &l.ssm_out})
      d.weights += t->nbytes;
    d.weights += (l.attn_norm.size() + l.ffn_norm.size()) * 4;
    // A MoE layer reads only the n_expert_used experts a token chose: on average their
    // share of the layer's expert bytes (the active bytes; the roofline counts these).
    uint64_t experts = 0;
    for (const std::vector<TensorView>* e : {&l.gate_exps, &l.up_exps, &l.down_exps})
      for (const TensorView& t : *e) experts += t.nbytes;
    d.expert_bytes += experts;
    if (experts > 0) d.weights += experts * static_cast<uint64_t>(c.moe.n_expert_used) / c.moe.n_expert;
  }
  const uint64_t kv_row = static_cast<uint64_t>(kv_pos_bytes(kv_types, c.n_head_kv, c.head_dim));
  d.kv_sliding_window_bytes = kv_row;
  for (const LayerConfig& lc : c.layers) {
    if (lc.sliding)
      d.sliding_windows.push_back(lc.window);
    else
      d.kv_per_position += kv_row;
  }
  return d;
}

Expected<nlohmann::json> run_bench(Model& model, const BenchOptions& o) {
  if (o.reps < 1) return Status::invalid_argument("repetitions must be >= 1");
  const Sizes sz = weight_sizes(model);
  std::mt19937_64 rng(o.seed);
  nlohmann::json out = nlohmann::json::array();
  for (int d : o.n_depth)
    if (d < 0) return Status::invalid_argument(fmt::format("depth {} must not be negative", d));
  auto run_test = [&](int n_prompt, int n_gen, int depth) -> Status {
    InferenceOptions io;
    io.kv_types = o.kv_types;
    io.max_step = o.n_ubatch;
    ASSIGN_OR_RETURN(InferenceState st,
                     InferenceState::create(model, depth + std::max(n_prompt, n_gen) + 1, io));
    const int32_t n_vocab = model.config().n_vocab;
    ASSIGN_OR_RETURN(int64_t warm, time_one(st, n_vocab, n_prompt, n_gen, depth, rng));
    (void)warm;
    std::vector<int64_t> ns;
    for (int r = 0; r < o.reps; ++r) {
      ASSIGN_OR_RETURN(int64_t t, time_one(st, n_vocab, n_prompt, n_gen, depth, rng));
      ns.push_back(t);
    }
    out.push_back(make_record(model, o, sz, n_prompt, n_gen, depth, ns));
    return {};
  };
  for (int d : o.n_depth)
    for (int p : o.n_prompt)
      if (p > 0) RETURN_IF_ERROR(run_test(p, 0, d));
  const bool decode = std::any_of(o.n_gen.begin(), o.n_gen.end(), [](int g) { return g > 0; });
  const size_t first_tg = out.size();
  // The ceiling on the same threads, just before and just after the decode tests.
  std::optional<BandwidthResult> before = decode ? probe_ceiling(model, o) : std::nullopt;
  for (int d : o.n_depth)
    for (int g : o.n_gen)
      if (g > 0) RETURN_IF_ERROR(run_test(0, g, d));
  std::optional<BandwidthResult> after = decode ? probe_ceiling(model, o) : std::nullopt;
  if (before && after && after->best_gbps > before->best_gbps) before = after;
  if (before) {
    const DecodeBytes db = decode_bytes(model, o.kv_types);
    for (size_t i = first_tg; i < out.size(); ++i)
      add_roofline(out[i], db, out[i]["n_gen"].get<int>(), out[i]["n_depth"].get<int>(), *before);
  }
  return out;
}

std::string bench_markdown(const nlohmann::json& records) {
  std::string s = "| model | size | params | backend | threads | test | t/s |\n"
                  "| ----- | ---: | -----: | ------- | ------: | ---: | --: |\n";
  for (const auto& r : records) {
    int np = r["n_prompt"], ng = r["n_gen"];
    std::string test = np > 0 ? fmt::format("pp{}", np) : fmt::format("tg{}", ng);
    if (r.value("n_depth", 0) > 0) test += fmt::format(" @ d{}", r["n_depth"].get<int>());
    s += fmt::format("| {} | {:.2f} MiB | {:.2f} M | {} ({}) | {} | {} | {:.2f} ± {:.2f} |\n",
                     r["model_type"].get<std::string>(), r["model_size"].get<double>() / 1048576.0,
                     r["model_n_params"].get<double>() / 1e6, r["backends"].get<std::string>(),
                     r["provenance"]["engine"]["kernel_path"].get<std::string>(), r["n_threads"].get<int>(),
                     test, r["avg_ts"].get<double>(), r["stddev_ts"].get<double>());
    if (r.contains("roofline"))
      s += fmt::format("|   roofline | {:.2f} MiB/token | | {:.1f} GB/s | | of {:.1f} GB/s | {:.0f}% |\n",
                       r["roofline"]["bytes_per_token"].get<double>() / 1048576.0,
                       r["roofline"]["effective_gbps"].get<double>(), r["roofline"]["ceiling_gbps"].get<double>(),
                       100.0 * r["roofline"]["fraction_of_ceiling"].get<double>());
  }
  return s;
}

}  // namespace edge
