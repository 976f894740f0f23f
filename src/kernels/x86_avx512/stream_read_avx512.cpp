#include <immintrin.h>

#include "kernels/stream_read.h"

namespace edge {

uint64_t stream_read_avx512(const uint8_t* data, uint64_t bytes) {
  // Four independent accumulators keep several cache lines in flight.
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  uint64_t i = 0;
  for (; i + 256 <= bytes; i += 256) {
    a0 = _mm512_xor_si512(a0, _mm512_loadu_si512(data + i));
    a1 = _mm512_xor_si512(a1, _mm512_loadu_si512(data + i + 64));
    a2 = _mm512_xor_si512(a2, _mm512_loadu_si512(data + i + 128));
    a3 = _mm512_xor_si512(a3, _mm512_loadu_si512(data + i + 192));
  }
  __m512i a = _mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3));
  return static_cast<uint64_t>(_mm512_reduce_add_epi64(a)) ^ stream_read_ref(data + i, bytes - i);
}

}  // namespace edge
