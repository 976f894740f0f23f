// The requests (epochs) a stage was told to drop: StageRunner::cancel() comes from another
// thread while run() polls between its steps (a frame, a window of codes) and forgets the
// epoch when it ends.
#pragma once

#include <cstdint>
#include <mutex>
#include <set>

namespace edge::pipeline {

class CancelledEpochs {
 public:
  void add(uint64_t epoch) {
    std::lock_guard<std::mutex> l(mu_);
    epochs_.insert(epoch);
  }
  bool contains(uint64_t epoch) const {
    std::lock_guard<std::mutex> l(mu_);
    return epochs_.count(epoch) > 0;
  }
  void forget(uint64_t epoch) {
    std::lock_guard<std::mutex> l(mu_);
    epochs_.erase(epoch);
  }

 private:
  mutable std::mutex mu_;
  std::set<uint64_t> epochs_;
};

}  // namespace edge::pipeline
