// quantize_gguf / add_quantized_tensors: plans every tensor first (so a refused input
// writes nothing), then streams each output tensor through a GgufWriter chunked producer.
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
#include "quant/quantize_file_stream.h"
#include "quant/repack.h"

namespace edge {

namespace {

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

bool is_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// Unpacked output (copies and conversions) is streamed in pieces of about this size.
constexpr uint64_t kRowChunkBytes = 4u << 20;

// State shared by the producers of one write: the inputs (their views must outlive the
// writer), their plans, and the progress counters (producers run one after another).
struct Job {
  std::vector<QuantizeInput> inputs;
  std::vector<TensorPlan> plans;
  int threads = 1;
  QuantizeProgress progress;
  QuantizeProgressInfo info;

  void advance(uint64_t bytes) {
    info.bytes_done += bytes;
    if (progress) progress(info);
  }
};

Expected<RowSource> ordered_rows(const QuantizeInput& in) {
  ASSIGN_OR_RETURN(RowSource rows, tensor_row_source(in.view));
  if (in.row_order.empty()) return rows;
  const std::vector<int64_t>* order = &in.row_order;
  return RowSource([rows, order](int64_t r, float* out) { return rows((*order)[r], out); });
}

// Streams an unpacked 2-D output row-chunk by row-chunk: emit(r0, r1, dst) fills rows
// [r0, r1) of out_row_bytes each.
Status stream_rows(Job& job, const QuantizeInput& in, uint64_t out_row_bytes,
                   const std::function<Status(int64_t, int64_t, uint8_t*)>& emit,
                   const GgufWriter::ChunkSink& sink) {
  const int64_t n = in.view.rows();
  const uint64_t in_row_bytes = n > 0 ? in.view.nbytes / static_cast<uint64_t>(n) : 0;
  const int64_t per_chunk = std::max<int64_t>(1, static_cast<int64_t>(kRowChunkBytes / std::max<uint64_t>(1, out_row_bytes)));
  std::vector<uint8_t> buf(static_cast<size_t>(std::min(per_chunk, n) * out_row_bytes));
  for (int64_t r0 = 0; r0 < n; r0 += per_chunk) {
    const int64_t r1 = std::min(n, r0 + per_chunk);
    RETURN_IF_ERROR(emit(r0, r1, buf.data()));
    RETURN_IF_ERROR(sink(buf.data(), static_cast<uint64_t>(r1 - r0) * out_row_bytes));
    job.advance(static_cast<uint64_t>(r1 - r0) * in_row_bytes);
  }
  return {};
}

Status produce_copy(Job& job, const QuantizeInput& in, const GgufWriter::ChunkSink& sink) {
  const TensorView& v = in.view;
  if (in.row_order.empty()) {  // straight from the mapping, a piece at a time
    for (uint64_t off = 0; off < v.nbytes; off += kRowChunkBytes) {
      const uint64_t len = std::min<uint64_t>(kRowChunkBytes, v.nbytes - off);
      RETURN_IF_ERROR(sink(v.data + off, len));
      if (in.file) drop_mapped_pages(*in.file, v.data + off, len);
      job.advance(len);
    }
    return {};
  }
  const uint64_t row_bytes = v.nbytes / static_cast<uint64_t>(v.rows());
  return stream_rows(job, in, row_bytes, [&](int64_t r0, int64_t r1, uint8_t* dst) {
    for (int64_t r = r0; r < r1; ++r)
      std::memcpy(dst + (r - r0) * row_bytes, v.data + in.row_order[r] * row_bytes, row_bytes);
    return Status();
  }, sink);
}

// 2-D F32 -> F16 (a weight whose K fits no packed group).
Status produce_f16(Job& job, const QuantizeInput& in, const GgufWriter::ChunkSink& sink) {
  ASSIGN_OR_RETURN(RowSource rows, ordered_rows(in));
  const int64_t k = in.view.cols();
  std::vector<float> row(static_cast<size_t>(k));
  return stream_rows(job, in, static_cast<uint64_t>(k) * 2, [&](int64_t r0, int64_t r1, uint8_t* dst) {
    for (int64_t r = r0; r < r1; ++r) {
      RETURN_IF_ERROR(rows(r, row.data()));
      for (int64_t i = 0; i < k; ++i) {
        const uint16_t h = f32_to_f16(row[i]);
        std::memcpy(dst + ((r - r0) * k + i) * 2, &h, 2);
      }
    }
    return Status();
  }, sink);
}

// 1-D float -> F32 (x + offset): norms and biases, small enough to hold whole.
Status produce_f32(Job& job, const QuantizeInput& in, const GgufWriter::ChunkSink& sink) {
  std::vector<float> v(static_cast<size_t>(in.view.numel()));
  RETURN_IF_ERROR(dequantize_gguf_row(in.view.dtype, in.view.data, in.view.numel(), v.data()));
  for (float& x : v) x += in.offset;
  RETURN_IF_ERROR(sink(v.data(), v.size() * 4));
  job.advance(in.view.nbytes);
  return {};
}

Status produce_packed(Job& job, size_t i, const GgufWriter::ChunkSink& sink) {
  const QuantizeInput& in = job.inputs[i];
  const TensorPlan& p = job.plans[i];
  // [N, K] or experts [E, N, K]: panel j is expert j / P's panel j % P (quant/packed.h).
  const bool experts = in.view.shape.size() == 3;
  const int64_t e_count = experts ? in.view.shape[0] : 1;
  const int64_t n = in.view.shape[experts ? 1 : 0], k = in.view.cols();
  const int64_t per_expert = PackedFormat::panels(n);
  const uint64_t row_bytes = in.view.nbytes / static_cast<uint64_t>(e_count * n);
  auto first_row = [&](int64_t j) { return (j / per_expert) * n + (j % per_expert) * kPanelRows; };
  // After each batch: its source rows are no longer needed (only in source order).
  PanelsDone done = [&](int64_t p0, int64_t p1) {
    const int64_t r0 = first_row(p0);
    const int64_t r1 =
        (p1 - 1) / per_expert * n + std::min(n, ((p1 - 1) % per_expert + 1) * kPanelRows);
    const uint64_t bytes = static_cast<uint64_t>(r1 - r0) * row_bytes;
    if (in.file && in.row_order.empty())
      drop_mapped_pages(*in.file, in.view.data + r0 * row_bytes, bytes);
    job.advance(bytes);
  };
  if (p.action == TensorPlan::Action::kRepack) {
    if (!in.row_order.empty()) return Status::unsupported("row reordering of a GGUF block type");
    return repack_matrix_stream(
        in.view, sink, job.threads, done,
        KQuantCells{p.format.kind == PackedKind::kQ4K, p.format.kind == PackedKind::kQ6K,
                    p.format.kind == PackedKind::kQ5K});
  }
  ASSIGN_OR_RETURN(RowSource rows, ordered_rows(in));
  return quantize_experts_stream(p.format, e_count, n, k, rows, sink, job.threads, done);
}

Status produce(Job& job, size_t i, const GgufWriter::ChunkSink& sink) {
  const QuantizeInput& in = job.inputs[i];
  const uint64_t before = job.info.bytes_done;
  Status st;
  switch (job.plans[i].action) {
    case TensorPlan::Action::kCopy: st = produce_copy(job, in, sink); break;
    case TensorPlan::Action::kToF16: st = produce_f16(job, in, sink); break;
    case TensorPlan::Action::kToF32: st = produce_f32(job, in, sink); break;
    case TensorPlan::Action::kPack:
    case TensorPlan::Action::kRepack: st = produce_packed(job, i, sink); break;
  }
  if (!st.ok()) return st.with_context("tensor '" + in.name + "'");
  job.info.bytes_done = before + in.view.nbytes;  // exact, whatever the batches reported
  ++job.info.tensors_done;
  if (job.progress) job.progress(job.info);
  return {};
}

// The plan of one input, with its reordering and offset taken into account.
Expected<TensorPlan> plan_input(const QuantizeInput& in, const QuantizeOptions& o) {
  TensorView v = in.view;
  v.name = in.name;
  ASSIGN_OR_RETURN(TensorPlan p, plan_tensor(v, o));
  if (!in.row_order.empty() &&
      (v.shape.size() != 2 || in.row_order.size() != static_cast<size_t>(v.shape[0])))
    return Status::invalid_argument("tensor '" + in.name + "': row order of the wrong length");
  for (int64_t r : in.row_order)
    if (r < 0 || r >= v.shape[0])
      return Status::invalid_argument("tensor '" + in.name + "': row order out of range");
  if (in.offset != 0.0f) {
    if (v.shape.size() != 1 || !is_float_type(v.dtype))
      return Status::invalid_argument("tensor '" + in.name + "': an offset needs a 1-D float tensor");
    p.action = TensorPlan::Action::kToF32;
    p.out_dtype = DType::F32;
    p.out_bytes = static_cast<uint64_t>(v.numel()) * 4;
  }
  return p;
}


}  // namespace

const char* quant_type_name(QuantType t) {
  switch (t) {
    case QuantType::kW4A16: return "w4a16";
    case QuantType::kW4A8: return "w4a8";
    case QuantType::kW8: return "w8";
    case QuantType::kF16: return "f16";
    case QuantType::kMxfp4:
      return "mxfp4";
  }
  return "?";
}

Expected<QuantType> quant_type_from_name(std::string_view name) {
  for (QuantType t :
       {QuantType::kW4A16, QuantType::kW4A8, QuantType::kW8, QuantType::kF16, QuantType::kMxfp4})
    if (name == quant_type_name(t)) return t;
  return Status::invalid_argument("unknown quantisation type '" + std::string(name) +
                                  "' (want w4a16, w4a8, w8, f16 or mxfp4)");
}

const char* head_quant_name(HeadQuant h) {
  switch (h) {
    case HeadQuant::kSame: return "same";
    case HeadQuant::kW6: return "w6";
    case HeadQuant::kW8: return "w8";
  }
  return "?";
}

Expected<HeadQuant> head_quant_from_name(std::string_view name) {
  for (HeadQuant h : {HeadQuant::kSame, HeadQuant::kW6, HeadQuant::kW8})
    if (name == head_quant_name(h)) return h;
  return Status::invalid_argument("unknown output-head type '" + std::string(name) +
                                  "' (want same, w6 or w8)");
}

Expected<PackedFormat> requested_format(const QuantizeOptions& o) {
  PackedFormat f;
  if (o.type != QuantType::kF16 && o.repack_blocks)
    return Status::invalid_argument("--repack goes with --type f16 (the other types repack GGUF "
                                    "block types anyway)");
  if (o.type == QuantType::kMxfp4) {
    if (o.asym || (o.group != 0 && o.group != 32))
      return Status::invalid_argument(
          "mxfp4 is blocks of 32, symmetric: no --asym, --group 32 only");
    return PackedFormat{PackedKind::kMxfp4, 32};
  }
  const bool w8 = o.type == QuantType::kW8;
  f.kind = w8 ? PackedKind::kW8 : (o.asym ? PackedKind::kW4Asym : PackedKind::kW4Sym);
  f.group = o.group != 0 ? o.group : (w8 ? 32 : 128);
  if (!is_valid_group(f.group))
    return Status::invalid_argument("quantisation group " + std::to_string(o.group) +
                                    " (want 32, 64 or 128)");
  if (w8 && o.asym) return Status::invalid_argument("w8 has no asymmetric variant");
  if (o.type == QuantType::kF16 && (o.asym || o.group != 0))
    return Status::invalid_argument("f16 takes no --group or --asym");
  if (o.type == QuantType::kF16 && o.head != HeadQuant::kSame)
    return Status::invalid_argument("f16 converts only: no --output-type");

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
  if (t.shape.size() == 1 && (t.dtype == DType::F16 || t.dtype == DType::BF16)) {
    p.action = TensorPlan::Action::kToF32;
    p.out_dtype = DType::F32;
    p.out_bytes = static_cast<uint64_t>(t.numel()) * 4;
    return p;
  }
  // Experts [E, N, K] ("*_exps.weight") pack as E matrices (quant/packed.h); other 3-D
  // tensors (convolution kernels) are copied.
  // A MoE router (ffn_gate_inp: small, and its logits choose the experts) and a DeltaNet
  // conv kernel (ssm_conv1d [C, 4], read as F32 by the conv) stay as they are, as
  // llama.cpp's quantiser leaves them.
  const bool experts = t.shape.size() == 3 && ends_with(t.name, "_exps.weight");
  const bool router = t.name.find("ffn_gate_inp") != std::string::npos ||
                      t.name.find("ssm_conv1d") != std::string::npos;
  const bool weight = (t.shape.size() == 2 || experts) && ends_with(t.name, ".weight") &&
                      t.numel() > 0 && !router;
  if (!weight) return p;  // F32 norms, biases, other tensors: copied
  const int64_t k = t.cols();
  if (o.type == QuantType::kF16 && !(o.repack_blocks && is_repackable(t.dtype))) {
    // conversion only: F32 -> F16, the rest as is
    if (t.dtype == DType::F32) {
      p.action = TensorPlan::Action::kToF16;
      p.out_dtype = DType::F16;
      p.out_bytes = static_cast<uint64_t>(t.numel()) * 2;
    }
    return p;
  }
  if (o.head != HeadQuant::kSame && t.name == "output.weight")
    want = PackedFormat{o.head == HeadQuant::kW6 ? PackedKind::kW6 : PackedKind::kW8, 32};
  if (is_float_type(t.dtype)) {
    if (k % want.group == 0) {
      p.format = want;
    } else if (k % 32 == 0) {
      p.format = PackedFormat{PackedKind::kW8, 32};
    } else {
      if (t.dtype == DType::F32 && !experts) {
        p.action = TensorPlan::Action::kToF16;
        p.out_dtype = DType::F16;
        p.out_bytes = static_cast<uint64_t>(t.numel()) * 2;
      }
      return p;
    }
    p.action = TensorPlan::Action::kPack;
  } else {
    auto f = repack_format(t.dtype, o.kcells);
    if (!f) return f.status().with_context("tensor '" + t.name + "'");
    p.format = *f;
    p.action = TensorPlan::Action::kRepack;
  }
  p.out_dtype = packed_dtype(p.format);
  p.out_bytes = static_cast<uint64_t>(packed_tensor_bytes(p.format, t.shape));
  return p;
}

Status quantize_gguf(const std::string& in, const std::string& out, const QuantizeOptions& o,
                     QuantizeProgress progress) {
  RETURN_IF_ERROR(requested_format(o).status());  // options checked before the input is opened
  ASSIGN_OR_RETURN(GgufFile src, GgufFile::open(in, packed_gguf_types()));
  GgufWriter w;
  for (const auto& [key, value] : src.metadata())
    if (key != "general.alignment") w.set_value(key, value);  // the writer restates it
  std::vector<QuantizeInput> inputs;
  for (const TensorView& t : src.tensors().all())
    inputs.push_back(QuantizeInput{t.name, t, {}, 0.0f, &src.mapped()});
  RETURN_IF_ERROR(add_quantized_tensors(w, std::move(inputs), o, std::move(progress)).with_context(in));
  // 64: every packed cell starts on a cache line, so SIMD kernels may use aligned loads.
  return w.write(out, std::max<uint64_t>(kPackedFileAlignment, src.alignment()));  // names `out`
}

Status add_quantized_tensors(GgufWriter& w, std::vector<QuantizeInput> inputs,
                             const QuantizeOptions& o, QuantizeProgress progress) {
  ASSIGN_OR_RETURN(PackedFormat want, requested_format(o));
  auto job = std::make_shared<Job>();
  job->threads = o.threads > 0 ? o.threads : ThreadPool::default_threads();
  job->progress = std::move(progress);
  for (const QuantizeInput& in : inputs) {
    ASSIGN_OR_RETURN(TensorPlan p, plan_input(in, o));
    job->plans.push_back(p);
    job->info.bytes_total += in.view.nbytes;
  }
  job->info.tensors_total = static_cast<int64_t>(inputs.size());
  job->inputs = std::move(inputs);
  if (o.type != QuantType::kF16) {
    w.set_string("edge.quant.type", quant_type_name(o.type));
    w.set_u32("edge.quant.group", static_cast<uint32_t>(want.group));
    w.set_bool("edge.quant.asym", want.kind == PackedKind::kW4Asym);
    w.set_string("edge.quant.activations", o.type == QuantType::kW4A16 ? "f32" : "int8");
    w.set_string("edge.quant.output", head_quant_name(o.head));
  } else if (o.repack_blocks) {
    // Block types repacked here run as the engine runs them when it repacks at load (int8
    // activations), so this file computes what the source file computes.
    w.set_string("edge.quant.activations", "int8");
  }
  for (size_t i = 0; i < job->inputs.size(); ++i) {
    const QuantizeInput& in = job->inputs[i];
    const TensorPlan& p = job->plans[i];
    GgufWriter::ChunkProducer producer = [job, i](const GgufWriter::ChunkSink& sink) {
      return produce(*job, i, sink);
    };
    RETURN_IF_ERROR(w.add_tensor_chunked(in.name, p.out_dtype, in.view.shape, p.out_bytes,
                                         std::move(producer)));
  }
  return {};
}

}  // namespace edge
