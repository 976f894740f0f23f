// GGUF v2/v3: reader over mmap and a writer. The reader validates every count, length and
// offset against the file size before use, so a truncated or corrupt file yields a Status
// naming the problem, never a crash or a huge allocation.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "formats/tensor.h"

namespace edge {

enum class GgufValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
  BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
const char* gguf_value_type_name(GgufValueType t);

// One metadata value. Scalars are widened (all integers to int64/uint64 as read, floats
// to double) but the on-disk type is kept so a round trip writes the same type.
struct GgufValue {
  GgufValueType type = GgufValueType::UINT8;
  GgufValueType elem_type = GgufValueType::UINT8;  // for ARRAY
  std::variant<int64_t, uint64_t, double, bool, std::string> scalar;
  // ARRAY payload: exactly one of these is filled, by element type.
  std::vector<int64_t> ints;         // all signed/unsigned integer and bool elements
  std::vector<double> floats;        // FLOAT32/FLOAT64 elements
  std::vector<std::string> strings;  // STRING elements
  // Nested arrays are read and skipped (kept as empty with elem_type ARRAY).

  size_t array_size() const { return ints.size() + floats.size() + strings.size(); }
};

// Block info for tensor type ids this layer does not know (our packed range, registered by
// the quant layer): returns false for an id it does not know either.
using GgufTypeResolver =
    std::function<bool(uint32_t type_id, int64_t* block_elems, int64_t* block_bytes)>;

class GgufFile {
 public:
  static Expected<GgufFile> open(const std::string& path);
  // Same, but tensor types outside GGML's ids are sized by `extra_types`.
  static Expected<GgufFile> open(const std::string& path, const GgufTypeResolver& extra_types);
  // Parses bytes already mapped or in memory (MappedFile::copy_of); open() maps, then this.
  static Expected<GgufFile> from_mapped(MappedFile file,
                                        const GgufTypeResolver& extra_types = GgufTypeResolver());

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  const std::string& path() const { return map_->path(); }
  const MappedFile& mapped() const { return *map_; }

  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(std::string_view key) const;

  // Typed getters: not_found if the key is missing, invalid_format if the type does not
  // convert (any integer type converts to int64; any numeric to double).
  Expected<std::string> get_string(std::string_view key) const;
  Expected<int64_t> get_int(std::string_view key) const;
  Expected<double> get_float(std::string_view key) const;
  Expected<bool> get_bool(std::string_view key) const;
  Expected<std::vector<std::string>> get_string_array(std::string_view key) const;
  Expected<std::vector<int64_t>> get_int_array(std::string_view key) const;
  Expected<std::vector<double>> get_float_array(std::string_view key) const;
  std::string get_string_or(std::string_view key, std::string def) const;
  int64_t get_int_or(std::string_view key, int64_t def) const;
  double get_float_or(std::string_view key, double def) const;
  bool get_bool_or(std::string_view key, bool def) const;

  // Tensor views point into the mapping; shapes are row-major (ne[] reversed).
  const TensorSet& tensors() const { return tensors_; }

 private:
  std::unique_ptr<MappedFile> map_;  // heap: views stay valid when GgufFile moves
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  TensorSet tensors_;
  friend class GgufReader;
};

// Writes GGUF v3. Tensor data is produced at write time one tensor at a time, so writing
// a large model holds at most one tensor's bytes in memory; a chunked producer
// (add_tensor_chunked) and add_tensor from existing bytes hold none: their pieces go
// straight to the file.
class GgufWriter {
 public:
  void set_string(const std::string& key, const std::string& v);
  void set_bool(const std::string& key, bool v);
  void set_u32(const std::string& key, uint32_t v);
  void set_i32(const std::string& key, int32_t v);
  void set_u64(const std::string& key, uint64_t v);
  void set_f32(const std::string& key, float v);
  void set_string_array(const std::string& key, const std::vector<std::string>& v);
  void set_f32_array(const std::string& key, const std::vector<float>& v);
  void set_i32_array(const std::string& key, const std::vector<int32_t>& v);
  void set_u32_array(const std::string& key, const std::vector<uint32_t>& v);
  void set_value(const std::string& key, const GgufValue& v);  // copy from a reader

  // shape row-major (outermost first). `produce` must fill exactly nbytes.
  using Producer = std::function<Status(uint8_t* dst, uint64_t nbytes)>;
  Status add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                    Producer produce);
  // Copies from existing bytes (which must stay valid until write()).
  Status add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                    const void* data, uint64_t nbytes);
  // For type ids outside GGML's (our packed range) whose size this layer cannot compute:
  // the caller states nbytes. For known types nbytes must match the computed size.
  Status add_tensor_sized(const std::string& name, DType dtype,
                          const std::vector<int64_t>& shape, uint64_t nbytes, Producer produce);

  // Streaming: at write time `produce` passes the tensor's bytes to `sink` in consecutive
  // pieces of any size (exactly nbytes in all; more or fewer is an error), and each piece
  // is written to the file before sink returns, so the producer's buffer is the only one.
  // Sizes are checked as for add_tensor_sized.
  using ChunkSink = std::function<Status(const void* data, uint64_t n)>;
  using ChunkProducer = std::function<Status(const ChunkSink& sink)>;
  Status add_tensor_chunked(const std::string& name, DType dtype,
                            const std::vector<int64_t>& shape, uint64_t nbytes,
                            ChunkProducer produce);

  Status write(const std::string& path, uint64_t alignment = 32) const;

 private:
  struct PendingTensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    uint64_t nbytes;
    ChunkProducer produce;
  };
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace edge
