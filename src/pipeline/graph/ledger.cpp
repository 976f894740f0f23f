#include "pipeline/graph/ledger.h"

#include <fmt/format.h>

#include "core/memory_ledger.h"

namespace edge::pipeline {

RamLedger::RamLedger(int64_t limit_bytes, std::string source)
    : limit_(limit_bytes), source_(std::move(source)) {}

Expected<uint64_t> RamLedger::reserve(const std::string& stage, DeviceClass device, int64_t bytes) {
  if (bytes < 0)
    return Status::invalid_argument(
        fmt::format("stage '{}': reservation {} bytes is negative", stage, bytes));
  std::lock_guard<std::mutex> lk(mu_);
  int64_t held = 0;
  for (const auto& [id, r] : held_) held += r.bytes;
  const int64_t free = limit_ - held;
  if (bytes > free)
    return Status::resource_exhausted(fmt::format(
        "stage '{}' ({}) wants {} ({} bytes) of host RAM; {} ({} bytes) available ({} {} minus {} "
        "reserved by other stages)",
        stage, device_class_name(device), format_bytes(bytes), bytes,
        format_bytes(std::max<int64_t>(free, 0)), std::max<int64_t>(free, 0), source_,
        format_bytes(limit_), format_bytes(held)));
  const uint64_t id = next_id_++;
  held_[id] = Reservation{id, stage, device, bytes, -1};
  return id;
}

Status RamLedger::release(uint64_t id) {
  std::lock_guard<std::mutex> lk(mu_);
  if (held_.erase(id) == 0) return Status::not_found(fmt::format("no reservation {}", id));
  return Status();
}

Status RamLedger::check_rss(uint64_t id, int64_t rss_bytes) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = held_.find(id);
  if (it == held_.end()) return Status::not_found(fmt::format("no reservation {}", id));
  it->second.measured_rss = rss_bytes;
  if (rss_bytes > it->second.bytes)
    return Status::resource_exhausted(
        fmt::format("stage '{}': RSS exceeds stage reservation ({} > {})", it->second.stage,
                    format_bytes(rss_bytes), format_bytes(it->second.bytes)));
  return Status();
}

int64_t RamLedger::reserved() const {
  std::lock_guard<std::mutex> lk(mu_);
  int64_t held = 0;
  for (const auto& [id, r] : held_) held += r.bytes;
  return held;
}

int64_t RamLedger::available() const {
  return limit_ - reserved();
}

std::vector<Reservation> RamLedger::reservations() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<Reservation> out;
  for (const auto& [id, r] : held_) out.push_back(r);
  return out;
}

nlohmann::json RamLedger::to_json() const {
  nlohmann::json stages = nlohmann::json::array();
  int64_t held = 0;
  for (const Reservation& r : reservations()) {
    held += r.bytes;
    stages.push_back({{"stage", r.stage},
                      {"device", device_class_name(r.device)},
                      {"reserved_bytes", r.bytes},
                      {"measured_rss_bytes", r.measured_rss}});
  }
  return {{"limit_bytes", limit_},
          {"limit_source", source_},
          {"reserved_bytes", held},
          {"stages", stages}};
}

}  // namespace edge::pipeline
