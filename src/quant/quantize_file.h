// GGUF -> packed GGUF. Every metadata key is copied; "edge.quant.type" (w4a16 | w4a8 | w8 |
// mxfp4), "edge.quant.group" (u32), "edge.quant.asym" (bool) and "edge.quant.activations"
// ("f32" for w4a16, "int8" for w4a8, w8 and mxfp4) are added.
//
// Per tensor (shape row-major [N, K]):
//   * 2-D "*.weight" of type F32/F16/BF16 (this includes token_embd.weight and
//     output.weight) -> the requested packed format when K % G == 0; otherwise the
//     fallback W8 g32 when K % 32 == 0; otherwise F16 (an F16 or BF16 source is copied
//     unchanged, an F32 source converted).
//   * 2-D "*.weight" of a GGUF block type -> repacked (repack.h: Q4_0/Q4_1/Q8_0/MXFP4
//     lossless, Q4_K to w4a_g32, the other block types to w8_g32) whatever the requested
//     kind, so pre-quantised codes are never requantised twice. Other block types are refused.
//   * 3-D experts "*_exps.weight" [E, N, K]: as a 2-D weight, expert by expert (E packed
//     [N, K] matrices back to back, quant/packed.h); other 3-D tensors are copied.
//   * --type mxfp4: every float weight as mxfp4_g32, by GGML's block rule (quant/mxfp4.h).
//   * 1-D F16/BF16 tensors (norms, biases) -> F32 (llama.cpp's convention);
//   * everything else (1-D F32, non-weight tensors) is copied unchanged.
// An input that already holds packed tensors is refused (quantise the original instead).
//
// Memory: the input is mmapped; each output tensor is streamed through GgufWriter's chunked
// producer (quantize_file_stream.h) a batch of panels at a time ([16, K] floats per thread
// plus a few panels of packed bytes), so the transient is a few MB whatever the tensor's
// size; the source pages read are dropped from RSS once written. The output goes to
// OUT.tmp, renamed to OUT only on success (a failure leaves no file). It is aligned to 64
// bytes (general.alignment), so every packed cell starts on a cache line.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "formats/gguf.h"
#include "formats/tensor.h"
#include "quant/packed.h"
#include "quant/repack.h"

namespace edge {

// kF16: no quantisation (a format conversion, e.g. HF -> GGUF): F32 weight matrices become
// F16, F16/BF16 and GGUF block types are copied; no edge.quant.* keys are written.
enum class QuantType { kW4A16, kW4A8, kW8, kF16, kMxfp4 };
const char* quant_type_name(QuantType t);  // "w4a16", "w4a8", "w8", "f16", "mxfp4"
Expected<QuantType> quant_type_from_name(std::string_view name);

// The output head's format (output.weight, [n_vocab, n_embd]). Its logits pick every token,
// and at a large vocabulary it is a large share of the bytes a token reads: llama.cpp's Q4
// mixes keep it at 6 bits (Q6_K). kSame: as the rest (--type); kW6 / kW8: 6- or 8-bit
// symmetric groups of 32. A head tied to the token embedding keeps the embedding's format.
enum class HeadQuant { kSame, kW6, kW8 };
const char* head_quant_name(HeadQuant h);  // "same", "w6", "w8"
Expected<HeadQuant> head_quant_from_name(std::string_view name);

struct QuantizeOptions {
  QuantType type = QuantType::kW4A16;
  int group = 0;      // 0: the default (128 for w4, 32 for w8); else 32, 64 or 128
  bool asym = false;  // w4 only: w = q s + min instead of (q - 8) s
  int threads = 0;    // 0: ThreadPool::default_threads()
  HeadQuant head = HeadQuant::kSame;  // float inputs only: a GGUF block type is repacked as is
  // kF16 only: GGUF block types (Q4_0, Q4_K, MXFP4, ...) are repacked into packed cells
  // (lossless, loaded by mmap) instead of copied; float weights stay as they are. For a file
  // whose experts are MXFP4 beside F16/BF16 attention (GPT-OSS): the same weights, mappable.
  bool repack_blocks = false;
  // GGUF Q4_K / Q5_K / Q6_K tensors: w4a_g32 / w6_g32 (portable: every kernel variant runs
  // them) or q4k_g256 / q5k_g256 / q6k_g256.
  KQuantCells kcells;
};

// The packed format the options ask for (after defaults), or invalid_argument.
Expected<PackedFormat> requested_format(const QuantizeOptions& o);

// What happens to one input tensor.
struct TensorPlan {
  enum class Action { kCopy, kPack, kRepack, kToF16, kToF32 };
  Action action = Action::kCopy;
  DType out_dtype = DType::F32;
  PackedFormat format;     // kPack / kRepack
  uint64_t out_bytes = 0;  // bytes written for it
};
Expected<TensorPlan> plan_tensor(const TensorView& t, const QuantizeOptions& o);

// Progress: input tensors / bytes handled so far and in all. Reported after every batch of
// panels (so a large tensor moves the bytes) and after every tensor.
struct QuantizeProgressInfo {
  int64_t tensors_done = 0, tensors_total = 0;
  uint64_t bytes_done = 0, bytes_total = 0;
};
using QuantizeProgress = std::function<void(const QuantizeProgressInfo&)>;

// One tensor to write. The view's bytes must stay valid until the writer has written.
struct QuantizeInput {
  std::string name;  // output (GGUF) name
  TensorView view;   // the source, row-major
  // 2-D only: output row r is source row row_order[r] (empty: identity). Used to turn HF
  // Llama's rotate-half q/k rows into GGUF's interleaved order.
  std::vector<int64_t> row_order;
  // 1-D float only: written as F32 (x + offset) (HF Gemma norms hold w, GGUF 1 + w).
  float offset = 0.0f;
  // The mapping the view lies in, if any: pages already written are dropped from RSS.
  const MappedFile* file = nullptr;
};

constexpr uint64_t kPackedFileAlignment = 64;

// Plans every input first (an input refused by the plan adds nothing), then adds each to
// `w` as a streamed tensor and records the edge.quant.* keys. Write with
// w.write(path, kPackedFileAlignment).
Status add_quantized_tensors(GgufWriter& w, std::vector<QuantizeInput> inputs,
                             const QuantizeOptions& o, QuantizeProgress progress = nullptr);

Status quantize_gguf(const std::string& in, const std::string& out, const QuantizeOptions& o,
                     QuantizeProgress progress = nullptr);

}  // namespace edge
