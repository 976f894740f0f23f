// KV cache element types: names, row sizes and the scalar row codecs the cache writer and
// the reference attention use (row layouts: api.h). Q8 rows: [n_head_kv * head_dim] int8
// codes, then one f32 scale per kv head (symmetric per head: attention reads one head's
// slice at a time). Q4 rows: rotated head slices in groups of 4-bit codes with f16 scales.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

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
    case KvType::kQ4:
      return "q4";
  }
  return "?";
}

const char* kv_type_choices() {
  return "f32, f16, bf16, q8, q4";
}

std::string kv_types_name(KvTypes t) {
  if (t.k == t.v) return kv_type_name(t.k);
  return std::string(kv_type_name(t.k)) + "/" + kv_type_name(t.v);
}

Expected<KvTypes> parse_kv_types(const std::string& k, const std::string& v) {
  KvTypes t;
  if (!parse_kv_type(k, &t.k))
    return Status::invalid_argument("unknown KV cache type '" + k + "' (" + kv_type_choices() +
                                    ")");
  t.v = t.k;
  if (!v.empty() && !parse_kv_type(v, &t.v))
    return Status::invalid_argument("unknown V cache type '" + v + "' (" + kv_type_choices() + ")");
  return t;
}

bool kv_type_fits(KvType t, int32_t head_dim) {
  return head_dim > 0 && (t != KvType::kQ4 || head_dim % 2 == 0);
}

Status check_kv_types(KvTypes t, int32_t head_dim) {
  for (KvType x : {t.k, t.v})
    if (!kv_type_fits(x, head_dim))
      return Status::invalid_argument(std::string("KV cache type ") + kv_type_name(x) +
                                      " cannot hold heads of " + std::to_string(head_dim) +
                                      " dims");
  return Status::ok_status();
}

namespace {

// The fixed sign of element i of a rotation block (D in api.h): bits of a Weyl sequence, so
// the signs look random to any structure the values have but are the same on every build.
float rotation_sign(int32_t i) {
  return ((static_cast<uint32_t>(i) * 0x9E3779B1u) >> 31) != 0 ? -1.0f : 1.0f;
}

// In-place unnormalised Walsh-Hadamard transform of x [n], n a power of two.
void walsh_hadamard(float* x, int32_t n) {
  for (int32_t len = 1; len < n; len *= 2)
    for (int32_t i = 0; i < n; i += 2 * len)
      for (int32_t j = i; j < i + len; ++j) {
        const float a = x[j], b = x[j + len];
        x[j] = a + b;
        x[j + len] = a - b;
      }
}

// Largest power of two dividing n (n > 0).
int32_t rotation_block(int32_t n) {
  return n & -n;
}

// Q4 codec of one head slice x [hd] (already rotated): codes [hd / 2], scales [hd / G] f16.
void q4_store_head(const float* x, int32_t hd, uint8_t* codes, uint16_t* scales) {
  const int32_t g = kv_q4_group(hd), half = g / 2;
  for (int32_t j = 0; j < hd / g; ++j) {
    const float* v = x + j * g;
    float amax = 0.0f, peak = 0.0f;
    for (int32_t i = 0; i < g; ++i)
      if (std::fabs(v[i]) > amax) amax = std::fabs(v[i]), peak = v[i];
    // The signed peak maps to code 0 (-8 * scale): 16 levels with the peak exact.
    const uint16_t h = f32_to_f16(peak / -8.0f);
    scales[j] = h;
    const float scale = f16_to_f32(h);
    const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
    for (int32_t b = 0; b < half; ++b) {
      const auto code = [&](float e) {
        return static_cast<uint8_t>(std::clamp(std::lround(e * inv) + 8, 0L, 15L));
      };
      codes[j * half + b] = static_cast<uint8_t>(code(v[b]) | code(v[b + half]) << 4);
    }
  }
}

void q4_load_head(const uint8_t* codes, const uint16_t* scales, int32_t hd, float* dst) {
  const int32_t g = kv_q4_group(hd), half = g / 2;
  for (int32_t j = 0; j < hd / g; ++j) {
    const float scale = f16_to_f32(scales[j]);
    for (int32_t b = 0; b < half; ++b) {
      const uint8_t c = codes[j * half + b];
      dst[j * g + b] = static_cast<float>((c & 15) - 8) * scale;
      dst[j * g + b + half] = static_cast<float>((c >> 4) - 8) * scale;
    }
  }
  kv_rotate(dst, hd, /*inverse=*/true);
}

// Where head h's codes and scales live in a Q4 row.
const uint8_t* q4_codes(const uint8_t* row, int32_t hd, int32_t h) {
  return row + static_cast<int64_t>(h) * hd / 2;
}
const uint16_t* q4_scales(const uint8_t* row, int32_t n_head_kv, int32_t hd, int32_t h) {
  const int64_t n = static_cast<int64_t>(n_head_kv) * hd;
  return reinterpret_cast<const uint16_t*>(row + n / 2) +
         static_cast<int64_t>(h) * (hd / kv_q4_group(hd));
}

}  // namespace

void kv_rotate(float* x, int32_t head_dim, bool inverse) {
  const int32_t n = rotation_block(head_dim);
  const float norm = 1.0f / std::sqrt(static_cast<float>(n));
  for (int32_t b = 0; b < head_dim; b += n) {
    float* v = x + b;
    if (!inverse)
      for (int32_t i = 0; i < n; ++i) v[i] *= rotation_sign(i);
    walsh_hadamard(v, n);
    for (int32_t i = 0; i < n; ++i) v[i] *= inverse ? norm * rotation_sign(i) : norm;
  }
}

bool parse_kv_type(const std::string& s, KvType* out) {
  for (KvType t : {KvType::kF32, KvType::kF16, KvType::kBF16, KvType::kQ8, KvType::kQ4})
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
    case KvType::kQ4:
      return n / 2 + 2 * (n / kv_q4_group(head_dim));
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
    case KvType::kQ4: {
      CHECK_MSG(kv_type_fits(t, head_dim), "kv_store_row: q4 needs an even head_dim");
      // One head at a time through a stack buffer (heads up to 512 wide; wider ones, which
      // no model has, take the heap).
      float local[512];
      std::vector<float> wide(head_dim > 512 ? static_cast<size_t>(head_dim) : 0);
      float* x = head_dim > 512 ? wide.data() : local;
      auto* scales = reinterpret_cast<uint16_t*>(dst + n / 2);
      const int64_t per_head = head_dim / kv_q4_group(head_dim);
      for (int32_t h = 0; h < n_head_kv; ++h) {
        std::memcpy(x, src + static_cast<int64_t>(h) * head_dim, static_cast<size_t>(head_dim) * 4);
        kv_rotate(x, head_dim, /*inverse=*/false);
        q4_store_head(x, head_dim, dst + static_cast<int64_t>(h) * head_dim / 2,
                      scales + h * per_head);
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
    case KvType::kQ4:
      for (int32_t h = 0; h < n_head_kv; ++h)
        q4_load_head(q4_codes(src, head_dim, h), q4_scales(src, n_head_kv, head_dim, h), head_dim,
                     dst + static_cast<int64_t>(h) * head_dim);
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
    case KvType::kQ4:
      q4_load_head(q4_codes(row, head_dim, h), q4_scales(row, n_head_kv, head_dim, h), head_dim,
                   dst);
      return;
  }
  CHECK_MSG(false, "kv_load_head: bad type");
}

void AttentionArgs::contiguous_f32(const float* k, const float* v, const uint8_t* storage[2]) {
  storage[0] = reinterpret_cast<const uint8_t*>(k);
  storage[1] = reinterpret_cast<const uint8_t*>(v);
  k_blocks = &storage[0];
  v_blocks = &storage[1];
  block_tokens = int64_t{1} << 40;  // one block holds every position
  k_row_bytes = v_row_bytes = static_cast<int64_t>(n_head_kv) * head_dim * 4;
  k_type = v_type = KvType::kF32;
}

}  // namespace edge
