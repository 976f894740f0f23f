// Bandwidth ceiling probe: the machine's streaming read rate on the same threads the
// engine uses, over a buffer far larger than the caches (default 1 GiB). Decode is then
// reported as a fraction of it (bytes of weights and KV read per token / time per token).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>

#include "core/status.h"

namespace edge {

class ThreadPool;

struct BandwidthResult {
  double best_gbps = 0;    // fastest pass (the ceiling)
  double median_gbps = 0;  // median of the passes
  int passes = 0;
  uint64_t bytes = 0;
  int threads = 0;
  const char* kernel = "";
  nlohmann::json to_json() const;
};

Expected<BandwidthResult> measure_read_bandwidth(ThreadPool& pool, uint64_t bytes, int passes);

}  // namespace edge
