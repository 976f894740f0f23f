// Streaming-read kernel for the bandwidth ceiling probe (docs/measuring.md rule 10): reads
// every byte of [data, data + bytes) once with the widest loads available and returns a
// value that depends on all of them (so the compiler cannot drop the reads).
#pragma once

#include <cstdint>

namespace edge {

using StreamReadFn = uint64_t (*)(const uint8_t* data, uint64_t bytes);

uint64_t stream_read_ref(const uint8_t* data, uint64_t bytes);
uint64_t stream_read_avx512(const uint8_t* data, uint64_t bytes);  // needs avx512f
uint64_t stream_read_avx2(const uint8_t* data, uint64_t bytes);    // needs avx2

// The fastest variant this CPU runs, and its name.
StreamReadFn best_stream_read(const char** name);

}  // namespace edge
