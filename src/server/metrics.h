// Server metrics in the Prometheus text format (version 0.0.4): requests by endpoint and
// status, prompt and generated tokens, time to first token and inter-token latency
// histograms, plus the engine's KV and prefix-cache gauges and the memory ledger, read at
// scrape time. Thread-safe: every handler thread records into one instance.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "edge/engine.h"

namespace edge::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);  // ascending, seconds
  void observe(double v);
  // "<name>_bucket{le=...}", "<name>_sum", "<name>_count" lines.
  std::string render(const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // [bounds + 1]: the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  void on_request(const std::string& endpoint, int status);
  void on_prompt_tokens(int64_t n);
  void on_generated_tokens(int64_t n);
  void on_ttft(double seconds);
  void on_inter_token(double seconds);
  void on_cancelled();

  // Everything, with the engine's state as of now.
  std::string render(const EngineStats& engine) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t prompt_tokens_ = 0, generated_tokens_ = 0, cancelled_ = 0;
  Histogram ttft_, itl_;
};

// Fixed names for /metrics labels: unknown paths are "other" (no unbounded label values).
std::string endpoint_label(const std::string& path);

}  // namespace edge::server
