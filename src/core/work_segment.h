// A contiguous range of work units that its owner consumes from the front while other
// threads may take from the back: each thread of a region owns one segment and reads it
// as one stream (what hardware prefetchers follow best), and a thread that finishes early
// steals the tail of another's, so a preempted or slower thread does not hold the region.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace edge {

class WorkSegment {
 public:
  // Units [front, back) with front <= back < 2^32.
  void reset(int64_t front, int64_t back) {
    range_.store(pack(front, back), std::memory_order_relaxed);
  }

  // Claims units into [*u0, *u1); false once the segment is empty. Claims never overlap.
  // A thief takes up to `chunk` from the back. The owner takes a quarter of what is left
  // (at least `chunk`) from the front: each claim is a locked instruction, which drains
  // the owner's stream of loads, so it claims rarely while much is left and in chunks
  // near the end, where a thief may be sharing the work. A claim's inner boundary falls on a
  // multiple of `align` (absolute unit index), so from aligned segment ends every claim but
  // the last holds whole multiples of it (the prefill tiles take panels in pairs).
  bool take(int64_t chunk, bool from_back, int64_t* u0, int64_t* u1, int64_t align = 1) {
    uint64_t r = range_.load(std::memory_order_relaxed);
    for (;;) {
      const int64_t f = static_cast<int64_t>(r & 0xFFFFFFFFu), b = static_cast<int64_t>(r >> 32);
      if (f >= b) return false;
      const int64_t want = from_back ? chunk : std::max(chunk, (b - f) / 4);
      const int64_t lo = from_back ? std::max(f, (b - want) / align * align) : f;
      const int64_t hi = from_back ? b : std::min(b, (f + want + align - 1) / align * align);
      const uint64_t next = from_back ? pack(f, lo) : pack(hi, b);
      if (range_.compare_exchange_weak(r, next, std::memory_order_relaxed)) {
        *u0 = lo;
        *u1 = hi;
        return true;
      }
    }
  }

 private:
  static uint64_t pack(int64_t front, int64_t back) {
    return static_cast<uint64_t>(front) | static_cast<uint64_t>(back) << 32;
  }
  // Own cache line: the owner updates it per claim and must not slow a neighbour's owner.
  alignas(64) std::atomic<uint64_t> range_{0};
};

}  // namespace edge
