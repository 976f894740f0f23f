// Where the server is in its life, as the health probes and a graceful drain see it:
// loading (listening, no engine yet) -> ready -> draining (no new requests; in-flight
// generations may finish until the drain deadline, then they are cancelled). It also
// counts the generations in flight, so that the drain knows when it is over. Lock-free:
// handler threads read it on every request and every wait.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace edge::server {

class Lifecycle {
 public:
  using Clock = std::chrono::steady_clock;
  enum class State { kLoading, kReady, kDraining };

  // One generation in flight while held (move-only); empty when the server was not ready.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& o) noexcept : owner_(o.owner_) { o.owner_ = nullptr; }
    Ticket& operator=(Ticket&& o) noexcept;
    ~Ticket() { release(); }
    explicit operator bool() const { return owner_ != nullptr; }
    void release();

   private:
    friend class Lifecycle;
    Lifecycle* owner_ = nullptr;
  };

  State state() const { return static_cast<State>(state_.load()); }
  void set_ready();
  // From any thread; the first call sets the deadline (later calls keep it).
  void begin_drain(Clock::duration grace);
  // True once a drain's grace period has run out: generations still running are cancelled.
  bool past_drain_deadline() const;

  // Admits a generation (an empty ticket when loading or draining).
  Ticket enter();
  int64_t in_flight() const { return in_flight_.load(); }
  // The drain is over: draining, and nothing in flight or `hard_stop` past the deadline
  // (a stream whose client stopped reading must not hold the process forever).
  bool drain_done(Clock::duration hard_stop) const;

 private:
  // Sequentially consistent throughout: enter() increments then reads the state, a drain
  // writes the state then reads the count, so one of them always sees the other.
  std::atomic<int> state_{static_cast<int>(State::kLoading)};
  std::atomic<int64_t> deadline_ns_{INT64_MAX};  // steady clock, since its epoch
  std::atomic<int64_t> in_flight_{0};
};

}  // namespace edge::server
