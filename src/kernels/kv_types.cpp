// KV cache element types: names, row sizes and the scalar row codecs the cache writer and
// the reference attention use. Q8 rows: [n_head_kv * head_dim] int8 codes, then one f32
// scale per kv head (symmetric per head: attention reads one head's slice at a time).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "kernels/api.h"

namespace edge {

const char* kv_type_name(KvType t) {
  switch (t) {
    case KvType::kF32: return "f32";
    case KvType::kF16: return "f16";
    case KvType::kBF16: return "bf16";
    case KvType::kQ8: return "q8";
  }
  return "?";
}

bool parse_kv_type(const std::string& s, KvType* out) {
  for (KvType t : {KvType::kF32, KvType::kF16, KvType::kBF16, KvType::kQ8})
    if (s == kv_type_name(t)) {
      *out = t;
      return true;
    }
  return false;
}

int64_t kv_row_bytes(KvType t, int32_t n_head_kv, int32_t head_dim) {
  const int64_t n = static_cast<int64_t>(n_head_kv) * head_dim;
  switch (t) {
    case KvType::kF32: return n * 4;
    case KvType::kF16:
    case KvType::kBF16: return n * 2;
    case KvType::kQ8: return n + 4 * static_cast<int64_t>(n_head_kv);
  }
  return 0;
}

void kv_store_row(KvType t, const float* src, int32_t n_head_kv, int32_t head_dim, uint8_t* dst) {
  const int64_t n = static_cast<int64_t>(n_head_kv) * head_dim;
  switch (t) {
    case KvType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case KvType::kF16: {
      auto* d = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
      return;
    }
    case KvType::kBF16: {
      auto* d = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return;
    }
    case KvType::kQ8: {
      auto* codes = reinterpret_cast<int8_t*>(dst);
      for (int32_t h = 0; h < n_head_kv; ++h) {
        const float* x = src + static_cast<int64_t>(h) * head_dim;
        float amax = 0.0f;
        for (int32_t d = 0; d < head_dim; ++d) amax = std::max(amax, std::fabs(x[d]));
        const float scale = amax / 127.0f;
        const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
        for (int32_t d = 0; d < head_dim; ++d)
          codes[static_cast<int64_t>(h) * head_dim + d] =
              static_cast<int8_t>(std::lround(std::clamp(x[d] * inv, -127.0f, 127.0f)));
        std::memcpy(dst + n + 4 * h, &scale, 4);
      }
      return;
    }
  }
  CHECK_MSG(false, "kv_store_row: bad type");
}

void kv_load_row(KvType t, const uint8_t* src, int32_t n_head_kv, int32_t head_dim, float* dst) {
  const int64_t n = static_cast<int64_t>(n_head_kv) * head_dim;
  switch (t) {
    case KvType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case KvType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(reinterpret_cast<const uint16_t*>(src)[i]);
      return;
    case KvType::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(reinterpret_cast<const uint16_t*>(src)[i]);
      return;
    case KvType::kQ8:
      for (int32_t h = 0; h < n_head_kv; ++h) {
        float scale;
        std::memcpy(&scale, src + n + 4 * h, 4);
        for (int32_t d = 0; d < head_dim; ++d) {
          const int64_t i = static_cast<int64_t>(h) * head_dim + d;
          dst[i] = static_cast<float>(reinterpret_cast<const int8_t*>(src)[i]) * scale;
        }
      }
      return;
  }
  CHECK_MSG(false, "kv_load_row: bad type");
}

void kv_load_head(KvType t, const uint8_t* row, int32_t n_head_kv, int32_t head_dim, int32_t h,
                  float* dst) {
  const int64_t off = static_cast<int64_t>(h) * head_dim;
  switch (t) {
    case KvType::kF32: std::memcpy(dst, row + off * 4, static_cast<size_t>(head_dim) * 4); return;
    case KvType::kF16: {
      const auto* s = reinterpret_cast<const uint16_t*>(row) + off;
      for (int32_t d = 0; d < head_dim; ++d) dst[d] = f16_to_f32(s[d]);
      return;
    }
    case KvType::kBF16: {
      const auto* s = reinterpret_cast<const uint16_t*>(row) + off;
      for (int32_t d = 0; d < head_dim; ++d) dst[d] = bf16_to_f32(s[d]);
      return;
    }
    case KvType::kQ8: {
      float scale;
      std::memcpy(&scale, row + static_cast<int64_t>(n_head_kv) * head_dim + 4 * h, 4);
      const auto* s = reinterpret_cast<const int8_t*>(row) + off;
      for (int32_t d = 0; d < head_dim; ++d) dst[d] = static_cast<float>(s[d]) * scale;
      return;
    }
  }
  CHECK_MSG(false, "kv_load_head: bad type");
}

void AttentionArgs::contiguous_f32(const float* k, const float* v, const uint8_t* storage[2]) {
  storage[0] = reinterpret_cast<const uint8_t*>(k);
  storage[1] = reinterpret_cast<const uint8_t*>(v);
  k_blocks = &storage[0];
  v_blocks = &storage[1];
  block_tokens = int64_t{1} << 40;  // one block holds every position
  row_bytes = static_cast<int64_t>(n_head_kv) * head_dim * 4;
  kv_type = KvType::kF32;
}

}  // namespace edge
