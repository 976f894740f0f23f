#include "pipeline/graph/credits.h"

#include <algorithm>
#include <string>

#include "core/check.h"

namespace edge::pipeline {

CreditGate::CreditGate(int32_t credits) : credits_(credits) {
  CHECK(credits > 0);
}

bool CreditGate::acquire(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lk(mu_);
  if (!closed_ && in_flight_ >= credits_) ++stalls_;
  if (!cv_.wait_for(lk, timeout, [&] { return closed_ || in_flight_ < credits_; })) return false;
  if (closed_) return false;
  ++in_flight_;
  high_water_ = std::max(high_water_, in_flight_);
  return true;
}

Status CreditGate::acknowledge(int32_t n) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    // Acknowledgements can come from another process: a bad count is its error, not ours.
    if (n < 0 || n > in_flight_)
      return Status::invalid_argument("acknowledged " + std::to_string(n) + " items with " +
                                      std::to_string(in_flight_) + " in flight");
    in_flight_ -= n;
  }
  cv_.notify_all();
  return Status();
}

void CreditGate::close() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

int32_t CreditGate::in_flight() const {
  std::lock_guard<std::mutex> lk(mu_);
  return in_flight_;
}

int32_t CreditGate::high_water() const {
  std::lock_guard<std::mutex> lk(mu_);
  return high_water_;
}

uint64_t CreditGate::stalls() const {
  std::lock_guard<std::mutex> lk(mu_);
  return stalls_;
}

uint64_t EpochCounter::next() {
  std::lock_guard<std::mutex> lk(mu_);
  return ++last_;
}

uint64_t EpochCounter::issued() const {
  std::lock_guard<std::mutex> lk(mu_);
  return last_;
}

}  // namespace edge::pipeline
