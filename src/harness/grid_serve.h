// The grid's load generator for serving arms: N concurrent streaming /v1/completions
// requests against an OpenAI-compatible server (ours or llama-server), timed per SSE
// chunk (one chunk per generated token in both servers; a chunk with empty text counts,
// the closing chunk with only a finish reason does not).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "harness/grid.h"
#include "harness/grid_process.h"

namespace edge {

struct ServeLevelResult {
  int streams = 0;
  int requests = 0;
  int errors = 0;
  int64_t tokens = 0;
  double wall_s = 0;
  std::vector<double> ttft_ms;  // one per successful request
  std::vector<double> itl_ms;   // every gap between consecutive chunks
  std::vector<std::string> error_samples;
  // c<N>_throughput_tok_s, c<N>_ttft_ms_p50/p99, c<N>_itl_ms_p50/p99, c<N>_errors
  void add_metrics(std::map<std::string, double>& m) const;
};

// Nearest-rank percentile of an unsorted sample (q in [0, 1]); 0 when empty.
double percentile(std::vector<double> v, double q);

// Drives one level against a ready server on 127.0.0.1:port.
ServeLevelResult run_serve_level(int port, const std::string& model_id, const ServeLoad& load,
                                 int streams, int level_seed);

struct ServeArmResult {
  double ready_s = 0;
  std::string model_id;
  std::string stopped;  // how the server ended
  std::vector<ServeLevelResult> levels;
  std::vector<RssPoint> rss;  // the server's process tree from spawn to stop
  int64_t peak_anon = 0;
};

// Starts the arm's server (owned: pinned to cpus, stopped and reaped here), waits for
// /health, warms it up, runs every level.
Expected<ServeArmResult> run_serve_arm(const ServeLoad& load, const std::vector<int>& cpus,
                                       int level_seed);

}  // namespace edge
