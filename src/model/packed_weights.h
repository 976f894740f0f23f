// Weight tensors of a GGUF file made ready for the kernels:
//  - our packed types (a pre-packed file) are checked and used in place: mmap, no copy;
//  - GGUF block types (Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K, ...) are repacked into
//    our one packed layout, panel by panel, into anonymous memory; the source pages of
//    each repacked tensor are then dropped from this process (MADV_DONTNEED) so no weight
//    is held twice;
//  - F32/F16/BF16 stay as they are.
#pragma once

#include <memory>
#include <vector>

#include "core/status.h"
#include "formats/gguf.h"
#include "quant/repack.h"

namespace edge {

// Anonymous memory holding repacked weights (page-aligned mmap, returned on destruction).
class AnonymousBuffer {
 public:
  static Expected<std::unique_ptr<AnonymousBuffer>> allocate(uint64_t bytes);
  ~AnonymousBuffer();
  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  AnonymousBuffer() = default;
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

struct PreparedTensors {
  TensorSet tensors;  // views: into the mapping, or into `owned`
  std::vector<std::unique_ptr<AnonymousBuffer>> owned;
  int64_t repacked = 0;        // tensors repacked from GGUF block types
  int64_t prepacked = 0;       // tensors already in our packed layout
  uint64_t repacked_bytes = 0;
};

Expected<PreparedTensors> prepare_gguf_tensors(const GgufFile& g, int threads);

// Adds `v` to out->tensors with its bytes in `buf` (v.data, v.nbytes are set to the buffer's),
// which out then owns. `repacked` counts it among the repacked tensors (packed cells built
// from a file's quantised blocks, as opposed to float tensors rearranged).
Status add_owned_tensor(PreparedTensors* out, std::unique_ptr<AnonymousBuffer> buf, TensorView v,
                        bool repacked);

// Tells the kernel this process no longer needs the file pages of [data, data + n) (a
// source tensor copied elsewhere): they leave our RssFile; the page cache may keep them.
void drop_source_pages(const uint8_t* data, uint64_t n);

// Where this engine repacks GGUF Q4_K, Q5_K and Q6_K: q4k_g256 / q5k_g256 / q6k_g256 when
// the chosen kernels run those cells (packed_kernels_run_q4k() / _q5k() / _q6k()), else
// w4a_g32 / w6_g32. EDGE_Q4K_CELLS=0 / EDGE_Q5K_CELLS=0 / EDGE_Q6K_CELLS=0 force the portable
// formats (A/B runs).
KQuantCells engine_kquant_cells();

}  // namespace edge
