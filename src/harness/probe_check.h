// One probe check being run: its timer, and fail()/skip() that keep the first reason (and
// add the later ones); the check lands in the report when it goes out of scope.
#pragma once

#include <chrono>
#include <string>

#include "harness/probe.h"

namespace edge::probe_detail {

using Clock = std::chrono::steady_clock;

inline double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

class Running {
 public:
  Running(ProbeReport& r, std::string name) : r_(r), t0_(Clock::now()) {
    c_.name = std::move(name);
  }
  ~Running() {
    c_.seconds = since(t0_);
    r_.checks.push_back(std::move(c_));
  }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;

  // False (and the check failed with `why`) unless `ok`.
  bool expect(bool ok, const std::string& why) {
    if (!ok) fail(why);
    return ok;
  }
  void fail(const std::string& why) {
    if (c_.result != "fail") c_.detail.clear();
    c_.result = "fail";
    c_.detail += (c_.detail.empty() ? "" : "; ") + why;
  }
  void skip(const std::string& why) {
    c_.result = "skipped";
    c_.detail = why;
  }
  bool failed() const { return c_.result == "fail"; }
  nlohmann::json& figures() { return c_.figures; }
  void note(const std::string& what) { c_.detail += (c_.detail.empty() ? "" : "; ") + what; }

 private:
  ProbeReport& r_;
  ProbeCheck c_;
  Clock::time_point t0_;
};

}  // namespace edge::probe_detail
