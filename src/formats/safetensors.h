// Safetensors: a single file, or a Hugging Face directory with model.safetensors or a
// sharded model.safetensors.index.json. File layout: u64 little-endian header length N,
// N bytes of JSON {"__metadata__": {str: str}, name: {"dtype", "shape", "data_offsets":
// [begin, end)}}, then the data buffer; offsets are relative to the buffer start.
//
// Dtypes: F32, F16, BF16, F64, I8, I16, I32, I64. U8, BOOL, F8_* and other unsigned types
// are refused as unsupported (naming the tensor) rather than reinterpreted as I8, which
// would silently change values above 127.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "formats/tensor.h"

namespace edge {

class SafetensorsModel {
 public:
  // A .safetensors file, or a directory holding model.safetensors or
  // model.safetensors.index.json (weight_map -> shard files, each mapped).
  static Expected<SafetensorsModel> open(const std::string& path_or_dir);
  // One file's bytes already mapped or in memory (MappedFile::copy_of).
  static Expected<SafetensorsModel> from_mapped(MappedFile file);

  // Views point into the mapped shard that holds them, ordered by (shard, data offset).
  const TensorSet& tensors() const { return tensors_; }
  // The "__metadata__" object (string values); for shards, the union over shards.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Mapped files, one per shard (for inspection and diagnostics).
  size_t num_files() const { return maps_.size(); }

 private:
  Status add_file(const std::string& path);
  Status add_mapped(MappedFile file);
  Status open_sharded(const std::string& dir, const std::string& index_path);

  std::vector<std::unique_ptr<MappedFile>> maps_;  // heap: views stay valid on move
  TensorSet tensors_;
  std::map<std::string, std::string> metadata_;
};

// Safetensors dtype spelling ("F32", "BF16", ...) of a DType, or nullptr if not writable.
const char* safetensors_dtype_name(DType t);

// Writes one .safetensors file (to path + ".tmp", then renamed). Tensor bytes are copied
// from each view's data; every view's nbytes must equal its shape times the dtype size.
Status write_safetensors(const std::string& path, const std::vector<TensorView>& tensors,
                         const std::map<std::string, std::string>& metadata);

// Writes model-0000i-of-0000n.safetensors shards of at most max_shard_bytes of tensor data
// each (a larger tensor gets a shard of its own) plus model.safetensors.index.json.
Status write_safetensors_sharded(const std::string& dir, const std::vector<TensorView>& tensors,
                                 uint64_t max_shard_bytes,
                                 const std::map<std::string, std::string>& metadata = {});

}  // namespace edge
