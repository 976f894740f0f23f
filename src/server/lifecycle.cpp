#include "server/lifecycle.h"

namespace edge::server {
namespace {
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Lifecycle::Clock::now().time_since_epoch()).count();
}
int64_t ns(Lifecycle::Clock::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); }
}  // namespace

Lifecycle::Ticket& Lifecycle::Ticket::operator=(Ticket&& o) noexcept {
  if (this != &o) {
    release();
    owner_ = o.owner_;
    o.owner_ = nullptr;
  }
  return *this;
}

void Lifecycle::Ticket::release() {
  if (owner_) owner_->in_flight_.fetch_sub(1);
  owner_ = nullptr;
}

void Lifecycle::set_ready() {
  int loading = static_cast<int>(State::kLoading);
  state_.compare_exchange_strong(loading, static_cast<int>(State::kReady));
}

void Lifecycle::begin_drain(Clock::duration grace) {
  if (state_.exchange(static_cast<int>(State::kDraining)) == static_cast<int>(State::kDraining)) return;
  deadline_ns_.store(now_ns() + ns(grace));
}

bool Lifecycle::past_drain_deadline() const {
  const int64_t d = deadline_ns_.load();
  return d != INT64_MAX && now_ns() >= d;
}

Lifecycle::Ticket Lifecycle::enter() {
  Ticket t;
  in_flight_.fetch_add(1);
  if (state() != State::kReady) {
    in_flight_.fetch_sub(1);
    return t;
  }
  t.owner_ = this;
  return t;
}

bool Lifecycle::drain_done(Clock::duration hard_stop) const {
  if (state() != State::kDraining) return false;
  if (in_flight_.load() == 0) return true;
  const int64_t d = deadline_ns_.load();
  return d != INT64_MAX && now_ns() >= d + ns(hard_stop);
}

}  // namespace edge::server
