// Output acknowledgements between a producer stage and its consumer: the consumer grants
// credits (one per item it has room for) and acknowledges each item it has finished with,
// which returns the credit; the producer sends only while it holds a credit. A slow
// consumer therefore stalls its producer at the credit limit instead of growing a queue.
// Also the epoch counter: every request entering a pipeline gets the next epoch, unique
// and gap-free across a run.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "core/status.h"

namespace edge::pipeline {

class CreditGate {
 public:
  explicit CreditGate(int32_t credits);

  // Producer: takes a credit, waiting up to `timeout` for one. False on timeout or after
  // close() (the consumer is gone: stop producing).
  bool acquire(std::chrono::milliseconds timeout);
  // Consumer: finished with n items; their credits return to the producer. Refused when
  // more are acknowledged than are in flight.
  Status acknowledge(int32_t n = 1);
  void close();

  int32_t credits() const { return credits_; }
  int32_t in_flight() const;   // items sent and not yet acknowledged
  int32_t high_water() const;  // most items ever in flight at once
  uint64_t stalls() const;     // acquire() calls that had to wait

 private:
  const int32_t credits_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int32_t in_flight_ = 0, high_water_ = 0;
  uint64_t stalls_ = 0;
  bool closed_ = false;
};

class EpochCounter {
 public:
  uint64_t next();  // 1, 2, 3, ...: never reused, never skipped
  uint64_t issued() const;

 private:
  mutable std::mutex mu_;
  uint64_t last_ = 0;
};

}  // namespace edge::pipeline
