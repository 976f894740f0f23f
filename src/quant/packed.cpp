// Packed layout bookkeeping: cell sizes, names, GGUF type ids and the reader's sizing hook.
#include "quant/packed.h"

#include "core/check.h"

namespace edge {

namespace {

// log2(G / 32) for the supported groups; -1 otherwise.
int group_index(int64_t g) {
  switch (g) {
    case 32: return 0;
    case 64: return 1;
    case 128: return 2;
    default: return -1;
  }
}

// 4 kinds x 3 groups, then q4k_g256, q6k_g256, q5k_g256.
constexpr uint32_t kPackedTypeCount = 15;
constexpr uint32_t kQ4KType = 12;
constexpr uint32_t kQ6KType = 13;
constexpr uint32_t kQ5KType = 14;
// kMxfp4 follows the formula (3 * kind + log2(G / 32)); the ids between are no type.
constexpr uint32_t kMxfp4Type = 3 * static_cast<uint32_t>(PackedKind::kMxfp4);

bool is_super_block(PackedKind k) {
  return k == PackedKind::kQ4K || k == PackedKind::kQ5K || k == PackedKind::kQ6K;
}

}  // namespace

bool is_valid_group(int64_t group) { return group_index(group) >= 0; }

bool is_valid_format(const PackedFormat& f) {
  if (f.kind == PackedKind::kMxfp4) return f.group == 32;
  return is_super_block(f.kind) ? f.group == 256 : is_valid_group(f.group);
}

int64_t PackedFormat::group_bytes() const {
  const int64_t g = group;
  switch (kind) {
    case PackedKind::kW4Sym: return 8 * g + 32;        // 16 rows x G nibbles + 16 fp16 scales
    case PackedKind::kW4Asym: return 8 * g + 32 + 32;  // ... + 16 fp16 mins
    case PackedKind::kW8: return 16 * g + 32 + 32;     // 16 rows x G int8 + scales + int16 sums
    case PackedKind::kW6: return 12 * g + 32;          // 16 rows x G (nibble + 2 bits) + scales
    case PackedKind::kQ4K:
      return 8 * g + 16 * 16 + 64;  // nibbles, u8 sc + m, fp16 d + dmin
    case PackedKind::kQ6K:
      return 12 * g + 16 * 16 + 32;  // 6-bit codes, s8 sc, fp16 d
    case PackedKind::kQ5K:
      return 10 * g + 16 * 16 + 64;  // nibbles + 1 bit, u8 sc + m, fp16 d + dmin
    case PackedKind::kMxfp4:
      return 8 * g + 16;  // 16 rows x G E2M1 nibbles + 16 E8M0 bytes
  }
  return 0;
}

double PackedFormat::bits_per_weight() const {
  return static_cast<double>(group_bytes()) * 8.0 / static_cast<double>(kPanelRows * group);
}

std::string PackedFormat::name() const {
  const char* k = kind == PackedKind::kW4Sym    ? "w4s"
                  : kind == PackedKind::kW4Asym ? "w4a"
                  : kind == PackedKind::kW6     ? "w6"
                  : kind == PackedKind::kQ4K    ? "q4k"
                  : kind == PackedKind::kQ6K    ? "q6k"
                  : kind == PackedKind::kQ5K    ? "q5k"
                  : kind == PackedKind::kMxfp4  ? "mxfp4"
                                                : "w8";
  return std::string(k) + "_g" + std::to_string(group);
}

int64_t packed_tensor_bytes(const PackedFormat& f, const std::vector<int64_t>& shape) {
  if (shape.size() == 2) return f.matrix_bytes(shape[0], shape[1]);
  if (shape.size() == 3) return shape[0] * f.matrix_bytes(shape[1], shape[2]);
  return 0;
}

DType packed_dtype(const PackedFormat& f) {
  if (f.kind == PackedKind::kMxfp4) {
    CHECK_MSG(f.group == 32, "mxfp4 cells are groups of 32");
    return static_cast<DType>(kFirstPackedType + kMxfp4Type);
  }
  if (is_super_block(f.kind)) {
    CHECK_MSG(f.group == 256, "q4k, q5k and q6k cells are groups of 256");
    return static_cast<DType>(kFirstPackedType + (f.kind == PackedKind::kQ4K   ? kQ4KType
                                                  : f.kind == PackedKind::kQ5K ? kQ5KType
                                                                               : kQ6KType));
  }
  const int gi = group_index(f.group);
  CHECK_MSG(gi >= 0, "packed group must be 32, 64 or 128");
  return static_cast<DType>(kFirstPackedType + 3 * static_cast<uint32_t>(f.kind) +
                            static_cast<uint32_t>(gi));
}

bool packed_format_of(DType t, PackedFormat* out) {
  const uint32_t id = static_cast<uint32_t>(t);
  if (id == kFirstPackedType + kMxfp4Type) {
    if (out) *out = PackedFormat{PackedKind::kMxfp4, 32};
    return true;
  }
  if (id < kFirstPackedType || id >= kFirstPackedType + kPackedTypeCount) return false;
  const uint32_t rel = id - kFirstPackedType;
  if (out && rel >= kQ4KType) {
    *out = PackedFormat{rel == kQ4KType   ? PackedKind::kQ4K
                        : rel == kQ5KType ? PackedKind::kQ5K
                                          : PackedKind::kQ6K,
                        256};
  } else if (out) {
    out->kind = static_cast<PackedKind>(rel / 3);
    out->group = 32 << (rel % 3);
  }
  return true;
}

bool is_packed_dtype(DType t) { return packed_format_of(t, nullptr); }

bool packed_gguf_block_info(uint32_t type_id, int64_t* block_elems, int64_t* block_bytes) {
  PackedFormat f;
  if (!packed_format_of(static_cast<DType>(type_id), &f)) return false;
  if (block_elems) *block_elems = f.group;
  if (block_bytes) *block_bytes = f.group_bytes() / kPanelRows;
  return true;
}

GgufTypeResolver packed_gguf_types() { return &packed_gguf_block_info; }

Expected<PackedFormat> check_packed_tensor(const TensorView& t, const MappedFile& file) {
  PackedFormat f;
  if (!packed_format_of(t.dtype, &f))
    return Status::invalid_argument("tensor '" + t.name + "' is not a packed type (id " +
                                    std::to_string(static_cast<uint32_t>(t.dtype)) + ")");
  // Dims below 2^40 each, so the byte count below cannot overflow for a crafted shape.
  bool dims_ok = (t.shape.size() == 2 || t.shape.size() == 3) && t.shape.back() % f.group == 0;
  for (int64_t d : t.shape) dims_ok = dims_ok && d > 0 && d < (int64_t{1} << 40);
  if (!dims_ok)
    return Status::invalid_format("tensor '" + t.name + "' " + f.name() + " has shape " +
                                  t.shape_string() + "; want [N, K] or [E, N, K] with K a " +
                                  "multiple of " + std::to_string(f.group));
  const __int128 experts = t.shape.size() == 3 ? t.shape[0] : 1;
  const int64_t n = t.shape[t.shape.size() - 2], k = t.shape.back();
  const __int128 need128 =
      experts * PackedFormat::panels(n) * (k / f.group) * static_cast<__int128>(f.group_bytes());
  if (need128 > static_cast<__int128>(file.size()))
    return Status::invalid_format("tensor '" + t.name + "' " + f.name() + " " + t.shape_string() +
                                  " needs more bytes than " + file.path() + " holds");
  const uint64_t need = static_cast<uint64_t>(need128);
  const auto base = reinterpret_cast<uintptr_t>(file.data());
  const auto at = reinterpret_cast<uintptr_t>(t.data);
  if (at < base || at - base > file.size() || !file.contains(at - base, need))
    return Status::invalid_format("tensor '" + t.name + "' " + f.name() + " " +
                                  t.shape_string() + " needs " + std::to_string(need) +
                                  " bytes, past the end of " + file.path());
  return f;
}

}  // namespace edge
