// quantize_gguf: plans every tensor first (so a refused input writes nothing), then streams
// the output through GgufWriter producers.
#include "quant/quantize_file.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "formats/gguf.h"
#include "quant/gguf_blocks.h"
#include "quant/quantize.h"
#include "quant/repack.h"

namespace edge {

namespace {

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

bool is_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// F32 [N, K] -> F16, row by row into the writer's buffer.
Status to_f16(const TensorView& t, uint8_t* dst, uint64_t nbytes) {
  if (nbytes != static_cast<uint64_t>(t.numel()) * 2 || t.nbytes != nbytes * 2)
    return Status::internal("tensor '" + t.name + "' F16 size mismatch");
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v;
    std::memcpy(&v, t.data + 4 * i, 4);
    const uint16_t h = f32_to_f16(v);
    std::memcpy(dst + 2 * i, &h, 2);
  }
  return {};
}

}  // namespace

const char* quant_type_name(QuantType t) {
  switch (t) {
    case QuantType::kW4A16: return "w4a16";
    case QuantType::kW4A8: return "w4a8";
    case QuantType::kW8: return "w8";
  }
  return "?";
}

Expected<QuantType> quant_type_from_name(std::string_view name) {
  for (QuantType t : {QuantType::kW4A16, QuantType::kW4A8, QuantType::kW8})
    if (name == quant_type_name(t)) return t;
  return Status::invalid_argument("unknown quantisation type '" + std::string(name) +
                                  "' (want w4a16, w4a8 or w8)");
}

Expected<PackedFormat> requested_format(const QuantizeOptions& o) {
  PackedFormat f;
  const bool w8 = o.type == QuantType::kW8;
  f.kind = w8 ? PackedKind::kW8 : (o.asym ? PackedKind::kW4Asym : PackedKind::kW4Sym);
  f.group = o.group != 0 ? o.group : (w8 ? 32 : 128);
  if (!is_valid_group(f.group))
    return Status::invalid_argument("quantisation group " + std::to_string(o.group) +
                                    " (want 32, 64 or 128)");
  if (w8 && o.asym) return Status::invalid_argument("w8 has no asymmetric variant");
  return f;
}

Expected<TensorPlan> plan_tensor(const TensorView& t, const QuantizeOptions& o) {
  ASSIGN_OR_RETURN(PackedFormat want, requested_format(o));
  TensorPlan p;
  p.out_dtype = t.dtype;
  p.out_bytes = t.nbytes;
  if (is_packed_dtype(t.dtype))
    return Status::invalid_argument("tensor '" + t.name + "' is already packed; quantise the "
                                    "original model instead");
  RETURN_IF_ERROR(check_tensor_bytes(t));
  const bool weight = t.shape.size() == 2 && ends_with(t.name, ".weight") && t.numel() > 0;
  if (!weight) return p;  // norms, biases, other tensors: copied
  const int64_t n = t.shape[0], k = t.shape[1];
  if (is_float_type(t.dtype)) {
    if (k % want.group == 0) {
      p.format = want;
    } else if (k % 32 == 0) {
      p.format = PackedFormat{PackedKind::kW8, 32};
    } else {
      if (t.dtype == DType::F32) {
        p.action = TensorPlan::Action::kToF16;
        p.out_dtype = DType::F16;
        p.out_bytes = static_cast<uint64_t>(t.numel()) * 2;
      }
      return p;
    }
    p.action = TensorPlan::Action::kPack;
  } else {
    auto f = repack_format(t.dtype);
    if (!f) return f.status().with_context("tensor '" + t.name + "'");
    p.format = *f;
    p.action = TensorPlan::Action::kRepack;
  }
  p.out_dtype = packed_dtype(p.format);
  p.out_bytes = static_cast<uint64_t>(p.format.matrix_bytes(n, k));
  return p;
}

Status quantize_gguf(const std::string& in, const std::string& out, const QuantizeOptions& o,
                     QuantizeProgress progress) {
  ASSIGN_OR_RETURN(PackedFormat want, requested_format(o));
  ASSIGN_OR_RETURN(GgufFile src, GgufFile::open(in, packed_gguf_types()));
  const int threads = o.threads > 0 ? o.threads : ThreadPool::default_threads();

  GgufWriter w;
  for (const auto& [key, value] : src.metadata())
    if (key != "general.alignment") w.set_value(key, value);  // the writer restates it
  w.set_string("edge.quant.type", quant_type_name(o.type));
  w.set_u32("edge.quant.group", static_cast<uint32_t>(want.group));
  w.set_bool("edge.quant.asym", want.kind == PackedKind::kW4Asym);
  w.set_string("edge.quant.activations", o.type == QuantType::kW4A16 ? "f32" : "int8");

  int64_t total = 0;
  for (const TensorView& t : src.tensors().all()) total += t.numel();
  auto done = std::make_shared<int64_t>(0);
  for (const TensorView& t : src.tensors().all()) {
    auto plan = plan_tensor(t, o);
    if (!plan) return plan.status().with_context(in);
    const TensorPlan p = *plan;
    const TensorView* v = &t;  // points into src, which outlives w.write()
    GgufWriter::Producer produce = [v, p, threads, done, total, &progress](
                                       uint8_t* dst, uint64_t nbytes) -> Status {
      Status st;
      switch (p.action) {
        case TensorPlan::Action::kCopy:
          if (nbytes != v->nbytes) return Status::internal("copy size mismatch");
          if (nbytes) std::memcpy(dst, v->data, nbytes);
          break;
        case TensorPlan::Action::kToF16: st = to_f16(*v, dst, nbytes); break;
        case TensorPlan::Action::kRepack: st = repack_matrix(*v, dst, nbytes, threads); break;
        case TensorPlan::Action::kPack: {
          ASSIGN_OR_RETURN(RowSource rows, tensor_row_source(*v));
          st = quantize_matrix(p.format, v->shape[0], v->shape[1], rows, dst, nbytes, threads);
          break;
        }
      }
      if (!st.ok()) return st.with_context("tensor '" + v->name + "'");
      *done += v->numel();
      if (progress) progress(*done, total);
      return {};
    };
    RETURN_IF_ERROR(w.add_tensor_sized(t.name, p.out_dtype, t.shape, p.out_bytes, std::move(produce)));
  }
  // 64: every packed cell starts on a cache line, so SIMD kernels may use aligned loads.
  return w.write(out, std::max<uint64_t>(64, src.alignment())).with_context(out);
}

}  // namespace edge
