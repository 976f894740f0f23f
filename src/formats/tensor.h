// Tensor views over file bytes. A view never owns memory: it points into a mapped file
// (or a buffer whose owner outlives the view). Shapes are row-major, outermost first:
// a weight matrix is [out_features, in_features] and row r starts at r * row_bytes.
// (GGUF lists ne[] innermost first; its reader reverses them into this convention.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace edge {

// Element types. Values are GGML's type ids so GGUF files map 1:1; our own packed types
// (quant layer) live in a reserved range starting at kFirstPackedType.
//
// MXFP4 (39): OCP microscaling FP4 (GPT-OSS's expert weights), blocks of 32 weights in 17
// bytes, one E8M0 exponent byte e then 16 bytes of 4-bit E2M1 codes. Element j (0..15) of a
// block is the low nibble of code byte j, element j + 16 its high nibble. A code c is a sign
// (bit 3) and a magnitude index c & 7 into the E2M1 values 0, 0.5, 1, 1.5, 2, 3, 4 and 6.
// GGML keeps the values doubled (0, 1, 2, 3, 4, 6, 8, 12, negated for codes 8..15), so a
// weight is 2^(e - 128) * doubled(c): E8M0 alone is 2^(e - 127), halved to undo the
// doubling. GGML reads e = 0 and e = 1 as the subnormal floats 2^-128 and 2^-127, and
// e = 255 (NaN in the OCP spec) as 2^127.
// clang-format off
enum class DType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, BF16 = 30, MXFP4 = 39,
  U8 = 900,  // safetensors' U8 (GPT-OSS's MXFP4 blocks and scales); GGML has no such type
};
// clang-format on
constexpr uint32_t kFirstPackedType = 1000;

const char* dtype_name(DType t);
// Elements per block and bytes per block (1 and sizeof(elem) for plain types).
// Returns false for an id we do not know (the caller reports the tensor by name).
bool dtype_block_info(DType t, int64_t* block_elems, int64_t* block_bytes);
// Bytes of a row of n elements, or an error if n is not a multiple of the block size.
Expected<uint64_t> dtype_row_bytes(DType t, int64_t n);
// Parses "f32", "f16", "bf16", "q4_0", ... (case-insensitive).
Expected<DType> dtype_from_name(std::string_view name);

struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // row-major, outermost first
  const uint8_t* data = nullptr;
  uint64_t nbytes = 0;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  // Product of every dim but the last (1 for a scalar or vector). Not numel() / cols():
  // a file may declare a zero last dim (an empty tensor), and that would divide by zero.
  int64_t rows() const {
    int64_t n = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i) n *= shape[i];
    return n;
  }
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  std::string shape_string() const;  // "[512, 64]"
};

// An ordered set of named views with lookup by name.
class TensorSet {
 public:
  // Fails if the name is already present.
  Status add(TensorView t);
  const TensorView* find(std::string_view name) const;
  const std::vector<TensorView>& all() const { return tensors_; }
  size_t size() const { return tensors_.size(); }

 private:
  std::vector<TensorView> tensors_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace edge
