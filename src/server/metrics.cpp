#include "server/metrics.h"

#include <fmt/format.h>

#include "core/memory_ledger.h"

namespace edge::server {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

std::string Histogram::render(const std::string& name) const {
  std::string out;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cumulative);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, count_);
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, sum_, name, count_);
  return out;
}

ServerMetrics::ServerMetrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      itl_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}) {}

void ServerMetrics::on_request(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> l(mu_);
  ++requests_[{endpoint, status}];
}
void ServerMetrics::on_prompt_tokens(int64_t n) {
  std::lock_guard<std::mutex> l(mu_);
  prompt_tokens_ += static_cast<uint64_t>(n);
}
void ServerMetrics::on_generated_tokens(int64_t n) {
  std::lock_guard<std::mutex> l(mu_);
  generated_tokens_ += static_cast<uint64_t>(n);
}
void ServerMetrics::on_ttft(double s) {
  std::lock_guard<std::mutex> l(mu_);
  ttft_.observe(s);
}
void ServerMetrics::on_inter_token(double s) {
  std::lock_guard<std::mutex> l(mu_);
  itl_.observe(s);
}
void ServerMetrics::on_cancelled() {
  std::lock_guard<std::mutex> l(mu_);
  ++cancelled_;
}

namespace {

void family(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void gauge(std::string& out, const char* name, const char* help, double v) {
  family(out, name, "gauge", help);
  out += fmt::format("{} {}\n", name, v);
}

void counter(std::string& out, const char* name, const char* help, double v) {
  family(out, name, "counter", help);
  out += fmt::format("{} {}\n", name, v);
}

void render_ledger(std::string& out) {
  const LedgerSnapshot snap = ledger_snapshot();
  family(out, "edge_memory_ledger_bytes", "gauge", "Bytes held per memory-ledger category.");
  for (int c = 0; c < kMemCategoryCount; ++c)
    out += fmt::format("edge_memory_ledger_bytes{{category=\"{}\"}} {}\n",
                       mem_category_name(static_cast<MemCategory>(c)), snap.current[c]);
  family(out, "edge_memory_ledger_peak_bytes", "gauge", "Peak bytes per memory-ledger category.");
  for (int c = 0; c < kMemCategoryCount; ++c)
    out += fmt::format("edge_memory_ledger_peak_bytes{{category=\"{}\"}} {}\n",
                       mem_category_name(static_cast<MemCategory>(c)), snap.peak[c]);
}

}  // namespace

std::string ServerMetrics::render(const EngineStats& e) const {
  std::string out;
  {
    std::lock_guard<std::mutex> l(mu_);
    family(out, "edge_requests_total", "counter", "HTTP requests by endpoint and status.");
    for (const auto& [key, n] : requests_)
      out += fmt::format("edge_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n", key.first,
                         key.second, n);
    counter(out, "edge_prompt_tokens_total", "Prompt tokens submitted.",
            static_cast<double>(prompt_tokens_));
    counter(out, "edge_generated_tokens_total", "Tokens generated.",
            static_cast<double>(generated_tokens_));
    counter(out, "edge_requests_cancelled_total", "Requests cancelled by a client disconnect.",
            static_cast<double>(cancelled_));
    family(out, "edge_time_to_first_token_seconds", "histogram",
           "Time from request to first token.");
    out += ttft_.render("edge_time_to_first_token_seconds");
    family(out, "edge_inter_token_latency_seconds", "histogram", "Time between generated tokens.");
    out += itl_.render("edge_inter_token_latency_seconds");
  }
  gauge(out, "edge_kv_blocks_used", "KV cache blocks in use.",
        static_cast<double>(e.kv_blocks_used));
  gauge(out, "edge_kv_blocks_total", "KV cache blocks in the pool.",
        static_cast<double>(e.kv_blocks_total));
  gauge(out, "edge_kv_bytes", "Bytes of the KV cache pool.", static_cast<double>(e.kv_bytes));
  gauge(out, "edge_requests_running", "Requests being scheduled.", static_cast<double>(e.running));
  gauge(out, "edge_requests_waiting", "Requests waiting to start.", static_cast<double>(e.waiting));
  gauge(out, "edge_requests_paused", "Requests paused by a slow consumer.",
        static_cast<double>(e.paused));
  counter(out, "edge_prefix_cache_queries_total", "Prefix-cache lookups.",
          static_cast<double>(e.prefix_cache_queries));
  counter(out, "edge_prefix_cache_hit_tokens_total", "Prompt tokens served from the prefix cache.",
          static_cast<double>(e.prefix_cache_hit_tokens));
  counter(out, "edge_prefix_cache_hits_total", "Requests that reused a cached prompt prefix.",
          static_cast<double>(e.prefix_cache_hits));
  counter(
      out, "edge_prefix_cache_window_miss_tokens_total",
      "Prompt tokens whose global-layer KV was cached but that were recomputed: the sliding-window "
      "layers' blocks before them had been reused.",
      static_cast<double>(e.prefix_cache_window_miss_tokens));
  counter(out, "edge_state_checkpoint_restores_total",
          "Recurrent-state checkpoints restored for a cached prefix (hybrid models).",
          static_cast<double>(e.state_checkpoint_restores));
  counter(out, "edge_state_checkpoint_saves_total",
          "Recurrent-state checkpoints saved at block boundaries (hybrid models).",
          static_cast<double>(e.state_checkpoint_saves));
  counter(out, "edge_spec_verify_steps_total", "Decode slices that verified speculative drafts.",
          static_cast<double>(e.spec_verify_steps));
  counter(out, "edge_spec_draft_tokens_total", "Speculative draft tokens verified.",
          static_cast<double>(e.spec_drafted));
  counter(out, "edge_spec_accepted_tokens_total", "Speculative draft tokens the model took.",
          static_cast<double>(e.spec_accepted));
  counter(out, "edge_engine_preemptions_total", "Requests preempted for KV space.",
          static_cast<double>(e.preemptions));
  counter(out, "edge_engine_requests_cancelled_total",
          "Engine requests cancelled (client gone, drain deadline).",
          static_cast<double>(e.requests_cancelled));
  render_ledger(out);
  return out;
}

std::string endpoint_label(const std::string& path) {
  static const char* known[] = {
      "/v1/models", "/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize",
      "/health",    "/health/live",    "/health/ready",        "/metrics",  "/v1/audio/speech"};
  for (const char* k : known)
    if (path == k) return k;
  return "other";
}

}  // namespace edge::server
