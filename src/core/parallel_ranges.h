// "Run over ranges in parallel, keep the first error": [0, n) is split into contiguous
// ranges, one per thread, each range is handed to a callback that returns a Status, and the
// first error any range reports is the result. The quantizers and the repacker run their
// panels this way (each thread fills its own scratch buffer once and walks its range).
#pragma once

#include <cstdint>
#include <functional>

#include "core/status.h"
#include "core/thread_pool.h"

namespace edge {

// Called once per non-empty range [begin, end) by thread `tid` of the region. A range
// stops at its first error: the callback returns it (with whatever context it adds).
using RangeTask = std::function<Status(int64_t begin, int64_t end, int tid)>;

// Runs `task` over [0, n) on `pool` (the calling thread alone, tid 0, when pool is null or
// n < 2). Other ranges run to their end after one fails; the result is the error recorded
// first (in time), or OK.
Status parallel_ranges(ThreadPool* pool, int64_t n, const RangeTask& task);

// The same on a pool of min(threads, n) threads started for this call (the calling thread
// alone when threads <= 1 or n < 2).
Status parallel_ranges(int threads, int64_t n, const RangeTask& task);

}  // namespace edge
