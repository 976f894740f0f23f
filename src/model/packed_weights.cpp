#include "model/packed_weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "core/memory_ledger.h"
#include "kernels/packed_api.h"
#include "quant/packed.h"
#include "quant/repack.h"

namespace edge {

Expected<std::unique_ptr<AnonymousBuffer>> AnonymousBuffer::allocate(uint64_t bytes) {
  std::unique_ptr<AnonymousBuffer> b(new AnonymousBuffer());
  if (bytes == 0) return b;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return Status::resource_exhausted("cannot allocate " + std::to_string(bytes) + " bytes for repacked weights");
  // Transparent huge pages where the kernel offers them on request: the repack writes every
  // byte once, and faulting 2 MiB pages in instead of 4 KiB ones took the 1.54B Q4_K_M
  // model's load from 7.1 s to 5.3 s (a VM's page fault is costly). Only whole aligned 2 MiB
  // ranges inside the mapping are huge, so the resident bytes stay the buffer's own.
  if (bytes >= (2u << 20)) madvise(p, bytes, MADV_HUGEPAGE);
  b->data_ = static_cast<uint8_t*>(p);
  b->size_ = bytes;
  ledger_add(MemCategory::kWeights, static_cast<int64_t>(bytes));  // repacked: anonymous
  return b;
}

AnonymousBuffer::~AnonymousBuffer() {
  if (!data_) return;
  munmap(data_, size_);
  ledger_sub(MemCategory::kWeights, static_cast<int64_t>(size_));
}

KQuantCells engine_kquant_cells() {
  static const KQuantCells cells = [] {
    auto off = [](const char* name) {
      const char* env = std::getenv(name);
      return env != nullptr && std::string(env) == "0";
    };
    return KQuantCells{packed_kernels_run_q4k() && !off("EDGE_Q4K_CELLS"),
                       packed_kernels_run_q6k() && !off("EDGE_Q6K_CELLS"),
                       packed_kernels_run_q5k() && !off("EDGE_Q5K_CELLS")};
  }();
  return cells;
}

void drop_source_pages(const uint8_t* data, uint64_t n) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t begin = (reinterpret_cast<uint64_t>(data) + page - 1) / page * page;
  uint64_t end = (reinterpret_cast<uint64_t>(data) + n) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

Status add_owned_tensor(PreparedTensors* out, std::unique_ptr<AnonymousBuffer> buf, TensorView v,
                        bool repacked) {
  v.data = buf->data();
  v.nbytes = buf->size();
  if (repacked) {
    out->repacked++;
    out->repacked_bytes += buf->size();
  }
  out->owned.push_back(std::move(buf));
  return out->tensors.add(std::move(v));
}

namespace {

// [N, K], or experts [E, N, K] as E packed matrices back to back (quant/packed.h).
Status repack_one(const TensorView& t, int threads, PreparedTensors& out) {
  if (t.shape.size() != 2 && t.shape.size() != 3)
    return Status::unsupported(t.name + ": " + dtype_name(t.dtype) +
                               " tensor must be 2-D or 3-D (experts) to repack, shape " +
                               t.shape_string());
  const KQuantCells cells = engine_kquant_cells();
  ASSIGN_OR_RETURN(PackedFormat f, repack_format(t.dtype, cells));
  RETURN_IF_ERROR(check_repackable_tensor(t, f));
  const uint64_t bytes = static_cast<uint64_t>(packed_tensor_bytes(f, t.shape));
  ASSIGN_OR_RETURN(auto buf, AnonymousBuffer::allocate(bytes));
  RETURN_IF_ERROR(repack_matrix(t, buf->data(), bytes, threads, cells).with_context(t.name));
  drop_source_pages(t.data, t.nbytes);
  TensorView v = t;
  v.dtype = packed_dtype(f);
  return add_owned_tensor(&out, std::move(buf), std::move(v), true);
}

}  // namespace

Expected<PreparedTensors> prepare_gguf_tensors(const GgufFile& g, int threads) {
  PreparedTensors out;
  for (const TensorView& t : g.tensors().all()) {
    if (is_packed_dtype(t.dtype)) {
      ASSIGN_OR_RETURN(PackedFormat f, check_packed_tensor(t, g.mapped()));
      TensorView v = t;
      v.nbytes = static_cast<uint64_t>(packed_tensor_bytes(f, t.shape));
      out.prepacked++;
      RETURN_IF_ERROR(out.tensors.add(std::move(v)));
    } else if (is_repackable(t.dtype)) {
      RETURN_IF_ERROR(repack_one(t, threads, out));
    } else {
      RETURN_IF_ERROR(out.tensors.add(t));
    }
  }
  return out;
}

}  // namespace edge
