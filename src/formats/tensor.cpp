#include "formats/tensor.h"

#include <cctype>
#include <cstdint>
#include <limits>

namespace edge {

namespace {

struct DTypeInfo {
  DType type;
  const char* name;  // GGML spelling (K-quants keep the capital K)
  int64_t block_elems;
  int64_t block_bytes;
};

// Block sizes follow GGML's block layouts, e.g. Q4_0 = f16 scale + 32 nibbles = 18 bytes,
// Q4_K = 256 elements in 144 bytes.
constexpr DTypeInfo kInfos[] = {
    {DType::F32, "f32", 1, 4},       {DType::F16, "f16", 1, 2},
    {DType::Q4_0, "q4_0", 32, 18},   {DType::Q4_1, "q4_1", 32, 20},
    {DType::Q5_0, "q5_0", 32, 22},   {DType::Q5_1, "q5_1", 32, 24},
    {DType::Q8_0, "q8_0", 32, 34},   {DType::Q8_1, "q8_1", 32, 36},
    {DType::Q2_K, "q2_K", 256, 84},  {DType::Q3_K, "q3_K", 256, 110},
    {DType::Q4_K, "q4_K", 256, 144}, {DType::Q5_K, "q5_K", 256, 176},
    {DType::Q6_K, "q6_K", 256, 210}, {DType::Q8_K, "q8_K", 256, 292},
    {DType::I8, "i8", 1, 1},         {DType::I16, "i16", 1, 2},
    {DType::I32, "i32", 1, 4},       {DType::I64, "i64", 1, 8},
    {DType::F64, "f64", 1, 8},       {DType::BF16, "bf16", 1, 2},
    {DType::MXFP4, "mxfp4", 32, 17},  // e8m0 exponent + 16 bytes of E2M1 nibbles
    {DType::U8, "u8", 1, 1},
};

const DTypeInfo* find_info(DType t) {
  for (const DTypeInfo& i : kInfos)
    if (i.type == t) return &i;
  return nullptr;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

}  // namespace

const char* dtype_name(DType t) {
  const DTypeInfo* i = find_info(t);
  return i ? i->name : "unknown";
}

bool dtype_block_info(DType t, int64_t* block_elems, int64_t* block_bytes) {
  const DTypeInfo* i = find_info(t);
  if (!i) return false;
  if (block_elems) *block_elems = i->block_elems;
  if (block_bytes) *block_bytes = i->block_bytes;
  return true;
}

Expected<uint64_t> dtype_row_bytes(DType t, int64_t n) {
  int64_t be = 0, bb = 0;
  if (!dtype_block_info(t, &be, &bb))
    return Status::unsupported("unknown tensor type id " +
                               std::to_string(static_cast<uint32_t>(t)));
  if (n < 0) return Status::invalid_argument("negative element count " + std::to_string(n));
  if (n % be != 0)
    return Status::invalid_argument(std::to_string(n) + " elements is not a multiple of the " +
                                    dtype_name(t) + " block size " + std::to_string(be));
  uint64_t blocks = static_cast<uint64_t>(n / be);
  if (blocks > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(bb))
    return Status::invalid_argument("byte size of " + std::to_string(n) + " " + dtype_name(t) +
                                    " elements overflows");
  return blocks * static_cast<uint64_t>(bb);
}

Expected<DType> dtype_from_name(std::string_view name) {
  for (const DTypeInfo& i : kInfos)
    if (iequals(name, i.name)) return i.type;
  return Status::invalid_argument("unknown tensor type name '" + std::string(name) + "'");
}

std::string TensorView::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Status TensorSet::add(TensorView t) {
  if (index_.count(t.name))
    return Status::invalid_format("duplicate tensor name '" + t.name + "'");
  index_.emplace(t.name, tensors_.size());
  tensors_.push_back(std::move(t));
  return {};
}

const TensorView* TensorSet::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace edge
