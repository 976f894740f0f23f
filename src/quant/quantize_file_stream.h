// Streaming producers for pre-packed files: a packed matrix is produced a batch of panels
// (16 rows each, packed.h) at a time and handed to a GgufWriter chunk sink, so writing a
// tensor of any size holds one batch of packed bytes plus one [16, K] float panel per
// thread, never the tensor (a 1.5B model's largest matrix would otherwise be ~70 MB of
// packed bytes, its float expansion ~500 MB).
#pragma once

#include <cstdint>
#include <functional>

#include "core/mapped_file.h"
#include "core/status.h"
#include "formats/gguf.h"
#include "quant/packed.h"
#include "quant/quantize.h"
#include "quant/repack.h"

namespace edge {

// Panels each thread produces per batch: a batch is at most threads * this many panels.
constexpr int64_t kStreamPanelsPerThread = 4;

// Fills packed panel `panel` into dst (panel_bytes); scratch: the caller-sized float
// buffer of this thread. Called concurrently for different panels.
using PanelFill = std::function<Status(int64_t panel, uint8_t* dst, float* scratch)>;
// Runs after a batch [panel_begin, panel_end) was passed to the sink (e.g. to drop the
// source pages it read).
using PanelsDone = std::function<void(int64_t panel_begin, int64_t panel_end)>;

// Produces panels [0, panels) in batches on up to `threads` threads and passes each batch,
// in order, to `sink` (one call per batch, at most threads * kStreamPanelsPerThread panels).
Status stream_panels(int64_t panels, int64_t panel_bytes, int64_t scratch_floats, int threads,
                     const PanelFill& fill, const GgufWriter::ChunkSink& sink,
                     const PanelsDone& done = nullptr);

// quantize_matrix, streamed: the same bytes, passed to `sink` batch by batch.
Status quantize_matrix_stream(const PackedFormat& f, int64_t n, int64_t k, const RowSource& src,
                              const GgufWriter::ChunkSink& sink, int threads = 1,
                              const PanelsDone& done = nullptr,
                              ScaleSearch search = ScaleSearch::kRmse);

// The same for `experts` matrices [n, k] stacked (quant/packed.h: each padded to whole
// panels on its own): src row e * n + r is expert e's row r; panels are numbered on through
// the experts.
Status quantize_experts_stream(const PackedFormat& f, int64_t experts, int64_t n, int64_t k,
                               const RowSource& src, const GgufWriter::ChunkSink& sink,
                               int threads = 1, const PanelsDone& done = nullptr,
                               ScaleSearch search = ScaleSearch::kRmse);

// repack_matrix, streamed (the source's byte size is checked first; 2-D or 3-D).
Status repack_matrix_stream(const TensorView& src, const GgufWriter::ChunkSink& sink,
                            int threads = 1, const PanelsDone& done = nullptr,
                            KQuantCells cells = {});

// Tells the kernel the pages of [p, p + n) inside `file` are no longer needed (the whole
// pages inside the range; nothing outside the mapping). The mapping is read-only, so the
// pages leave this process's RSS and are read back from the page cache if touched again.
void drop_mapped_pages(const MappedFile& file, const uint8_t* p, uint64_t n);

}  // namespace edge
