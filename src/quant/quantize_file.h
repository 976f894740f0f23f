// GGUF -> packed GGUF. Every metadata key is copied; "edge.quant.type" (w4a16 | w4a8 | w8),
// "edge.quant.group" (u32), "edge.quant.asym" (bool) and "edge.quant.activations" ("f32"
// for w4a16, "int8" for w4a8 and w8) are added.
//
// Per tensor (shape row-major [N, K]):
//   * 2-D "*.weight" of type F32/F16/BF16 (this includes token_embd.weight and
//     output.weight) -> the requested packed format when K % G == 0; otherwise the
//     fallback W8 g32 when K % 32 == 0; otherwise F16 (an F16 or BF16 source is copied
//     unchanged, an F32 source converted).
//   * 2-D "*.weight" of a GGUF block type -> repacked (repack.h: Q4_0/Q4_1/Q8_0 lossless,
//     Q4_K to w4a_g32, the other block types to w8_g32) whatever the requested kind, so
//     pre-quantised codes are never requantised twice. Other block types are refused.
//   * everything else (norms and biases, 1-D; non-weight tensors) is copied unchanged.
// An input that already holds packed tensors is refused (quantise the original instead).
//
// Memory: the input is mmapped; each output tensor is produced inside GgufWriter's
// producer, panel by panel ([16, K] floats per thread), into the writer's single
// one-tensor buffer, and written before the next tensor is produced. The output is
// aligned to 64 bytes (general.alignment), so every packed cell starts on a cache line.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "formats/tensor.h"
#include "quant/packed.h"

namespace edge {

enum class QuantType { kW4A16, kW4A8, kW8 };
const char* quant_type_name(QuantType t);  // "w4a16", "w4a8", "w8"
Expected<QuantType> quant_type_from_name(std::string_view name);

struct QuantizeOptions {
  QuantType type = QuantType::kW4A16;
  int group = 0;      // 0: the default (128 for w4, 32 for w8); else 32, 64 or 128
  bool asym = false;  // w4 only: w = q s + min instead of (q - 8) s
  int threads = 0;    // 0: ThreadPool::default_threads()
};

// The packed format the options ask for (after defaults), or invalid_argument.
Expected<PackedFormat> requested_format(const QuantizeOptions& o);

// What happens to one input tensor.
struct TensorPlan {
  enum class Action { kCopy, kPack, kRepack, kToF16 };
  Action action = Action::kCopy;
  DType out_dtype = DType::F32;
  PackedFormat format;     // kPack / kRepack
  uint64_t out_bytes = 0;  // bytes written for it
};
Expected<TensorPlan> plan_tensor(const TensorView& t, const QuantizeOptions& o);

// progress(done, total): elements of input tensors handled so far / in all (called after
// each tensor is written; may be empty).
using QuantizeProgress = std::function<void(int64_t done, int64_t total)>;
Status quantize_gguf(const std::string& in, const std::string& out, const QuantizeOptions& o,
                     QuantizeProgress progress = nullptr);

}  // namespace edge
