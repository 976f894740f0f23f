// Batch-of-panels streaming: threads fill disjoint panels of one batch buffer, the caller's
// thread then hands the batch to the sink (file writes stay sequential and in order).
#include "quant/quantize_file_stream.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "core/parallel_ranges.h"
#include "quant/gguf_blocks.h"
#include "quant/repack.h"

namespace edge {

Status stream_panels(int64_t panels, int64_t panel_bytes, int64_t scratch_floats, int threads,
                     const PanelFill& fill, const GgufWriter::ChunkSink& sink,
                     const PanelsDone& done) {
  if (panels <= 0) return {};
  const int nth = static_cast<int>(std::clamp<int64_t>(threads, 1, panels));
  const int64_t batch = std::min<int64_t>(panels, nth * kStreamPanelsPerThread);
  // The only transients: one batch of packed panels and one scratch per thread.
  std::vector<uint8_t> out(static_cast<size_t>(batch * panel_bytes));
  std::vector<std::vector<float>> scratch(static_cast<size_t>(nth));
  for (auto& s : scratch) s.resize(static_cast<size_t>(scratch_floats));
  std::unique_ptr<ThreadPool> pool;
  if (nth > 1) pool = std::make_unique<ThreadPool>(nth);
  for (int64_t b0 = 0; b0 < panels; b0 += batch) {
    const int64_t count = std::min(batch, panels - b0);
    RETURN_IF_ERROR(
        parallel_ranges(pool.get(), count, [&](int64_t p0, int64_t p1, int tid) -> Status {
          for (int64_t p = p0; p < p1; ++p) {
            Status st = fill(b0 + p, out.data() + p * panel_bytes,
                             scratch[static_cast<size_t>(tid)].data());
            if (!st.ok()) return st.with_context("panel " + std::to_string(b0 + p));
          }
          return Status();
        }));
    RETURN_IF_ERROR(sink(out.data(), static_cast<uint64_t>(count * panel_bytes)));
    if (done) done(b0, b0 + count);
  }
  return {};
}

Status quantize_matrix_stream(const PackedFormat& f, int64_t n, int64_t k, const RowSource& src,
                              const GgufWriter::ChunkSink& sink, int threads,
                              const PanelsDone& done, ScaleSearch search) {
  return quantize_experts_stream(f, 1, n, k, src, sink, threads, done, search);
}

Status quantize_experts_stream(const PackedFormat& f, int64_t experts, int64_t n, int64_t k,
                               const RowSource& src, const GgufWriter::ChunkSink& sink, int threads,
                               const PanelsDone& done, ScaleSearch search) {
  if (!is_valid_format(f) || experts <= 0 || k <= 0 || n <= 0 || k % f.group != 0)
    return Status::invalid_argument("cannot pack [" + std::to_string(n) + ", " +
                                    std::to_string(k) + "] as " + f.name());
  const int64_t panel_bytes = (k / f.group) * f.group_bytes();
  const int64_t per_expert = PackedFormat::panels(n);
  // scratch: the [16, k] float panel the rows are read into.
  PanelFill fill = [&](int64_t i, uint8_t* dst, float* rows) -> Status {
    const int64_t e = i / per_expert, p = i % per_expert;
    const int64_t valid = std::min(kPanelRows, n - p * kPanelRows);
    for (int64_t r = 0; r < valid; ++r)
      RETURN_IF_ERROR(src(e * n + p * kPanelRows + r, rows + r * k));
    return quantize_panel(f, k, rows, valid, dst, search);
  };
  return stream_panels(experts * per_expert, panel_bytes, kPanelRows * k, threads, fill, sink,
                       done);
}

Status repack_matrix_stream(const TensorView& src, const GgufWriter::ChunkSink& sink, int threads,
                            const PanelsDone& done, KQuantCells cells) {
  ASSIGN_OR_RETURN(PackedFormat f, repack_format(src.dtype, cells));
  RETURN_IF_ERROR(check_repackable_tensor(src, f));
  const int64_t k = src.cols();
  const int64_t panel_bytes = (k / f.group) * f.group_bytes();
  PanelFill fill = [&](int64_t p, uint8_t* dst, float* scratch) {
    return repack_tensor_panel(src, f, p, dst, scratch);
  };
  return stream_panels(tensor_panels(src), panel_bytes, kPanelRows * k, threads, fill, sink, done);
}

void drop_mapped_pages(const MappedFile& file, const uint8_t* p, uint64_t n) {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const auto base = reinterpret_cast<uintptr_t>(file.data());
  const auto lo = reinterpret_cast<uintptr_t>(p);
  if (file.data() == nullptr || lo < base || lo - base > file.size() || n > file.size() - (lo - base))
    return;  // not inside this mapping: never advise memory we do not own
  const uintptr_t begin = (lo + page - 1) / page * page;  // whole pages only
  const uintptr_t end = (lo + n) / page * page;
  if (end > begin)
    madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);  // advisory: errors ignored
}

}  // namespace edge
