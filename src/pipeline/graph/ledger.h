// One RAM ledger for every device class: on the boxes we target the iGPU and NPU share the
// CPU's DRAM, so a stage placed on either still spends host RAM. A reservation is taken
// before a stage starts and refused, naming the stage and both byte counts, when the
// memory the process may use (MemAvailable, cgroup room, --memory-limit) cannot hold it
// next to what is already reserved. A stage whose measured RSS exceeds its reservation
// is reported. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "pipeline/graph/graph.h"

namespace edge::pipeline {

struct Reservation {
  uint64_t id = 0;
  std::string stage;
  DeviceClass device = DeviceClass::kCpu;
  int64_t bytes = 0;
  int64_t measured_rss = -1;  // last RssAnon+RssFile of the stage's processes; -1: not measured
};

class RamLedger {
 public:
  // limit_bytes: what the process may use at most (memory_plan's read_memory_limit);
  // source names where it came from, for messages.
  RamLedger(int64_t limit_bytes, std::string source);

  // Reserves `bytes` for `stage`; refused when it does not fit beside the reservations held.
  Expected<uint64_t> reserve(const std::string& stage, DeviceClass device, int64_t bytes);
  Status release(uint64_t id);
  // Records a stage's measured RSS; an error "RSS exceeds stage reservation" when above it.
  Status check_rss(uint64_t id, int64_t rss_bytes);

  int64_t limit() const { return limit_; }
  int64_t reserved() const;
  int64_t available() const;  // limit - reserved
  std::vector<Reservation> reservations() const;
  nlohmann::json to_json() const;  // limit, reserved, per stage: device, bytes, rss

 private:
  const int64_t limit_;
  const std::string source_;
  mutable std::mutex mu_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Reservation> held_;
};

}  // namespace edge::pipeline
