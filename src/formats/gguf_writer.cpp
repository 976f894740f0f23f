// GGUF v3 writer. Metadata and tensor infos are written first; tensor bytes are streamed
// to path + ".tmp" piece by piece as each tensor's chunked producer emits them (a
// whole-tensor Producer is adapted with a buffer of that one tensor), and the file is
// renamed over `path` only when everything succeeded.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>
#include <unordered_set>

#include "core/atomic_file.h"
#include "formats/gguf.h"

namespace edge {

namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF"
constexpr uint32_t kGgufVersion = 3;
constexpr uint64_t kDefaultAlignment = 32;

uint64_t align_up(uint64_t x, uint64_t a) { return x + (a - x % a) % a; }

// Sequential little-endian output that remembers the first failure.
class Out {
 public:
  explicit Out(FILE* f) : f_(f) {}
  bool ok() const { return ok_; }
  uint64_t pos() const { return pos_; }
  void bytes(const void* p, uint64_t n) {
    if (!ok_ || n == 0) return;
    ok_ = std::fwrite(p, 1, n, f_) == n;
    pos_ += n;
  }
  template <typename T>
  void put(T v) { bytes(&v, sizeof(T)); }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  void pad_to(uint64_t alignment) {
    static const uint8_t zeros[256] = {};
    uint64_t n = align_up(pos_, alignment) - pos_;
    while (n > 0) {
      uint64_t k = n < sizeof(zeros) ? n : sizeof(zeros);
      bytes(zeros, k);
      n -= k;
    }
  }

 private:
  FILE* f_;
  bool ok_ = true;
  uint64_t pos_ = 0;
};

bool is_float_type(GgufValueType t) {
  return t == GgufValueType::FLOAT32 || t == GgufValueType::FLOAT64;
}

// Writes one integer/float/bool element of type t from a widened value.
void put_number(Out& o, GgufValueType t, int64_t i, uint64_t u, double d) {
  switch (t) {
    case GgufValueType::UINT8: o.put<uint8_t>(static_cast<uint8_t>(u)); break;
    case GgufValueType::INT8: o.put<int8_t>(static_cast<int8_t>(i)); break;
    case GgufValueType::UINT16: o.put<uint16_t>(static_cast<uint16_t>(u)); break;
    case GgufValueType::INT16: o.put<int16_t>(static_cast<int16_t>(i)); break;
    case GgufValueType::UINT32: o.put<uint32_t>(static_cast<uint32_t>(u)); break;
    case GgufValueType::INT32: o.put<int32_t>(static_cast<int32_t>(i)); break;
    case GgufValueType::UINT64: o.put<uint64_t>(u); break;
    case GgufValueType::INT64: o.put<int64_t>(i); break;
    case GgufValueType::FLOAT32: o.put<float>(static_cast<float>(d)); break;
    case GgufValueType::FLOAT64: o.put<double>(d); break;
    case GgufValueType::BOOL: o.put<uint8_t>(u != 0 ? 1 : 0); break;
    default: break;
  }
}

Status write_value(Out& o, const std::string& key, const GgufValue& v) {
  o.put<uint32_t>(static_cast<uint32_t>(v.type));
  if (v.type == GgufValueType::ARRAY) {
    o.put<uint32_t>(static_cast<uint32_t>(v.elem_type));
    if (v.elem_type == GgufValueType::STRING) {
      o.put<uint64_t>(v.strings.size());
      for (const std::string& s : v.strings) o.str(s);
    } else if (v.elem_type == GgufValueType::ARRAY) {
      o.put<uint64_t>(0);  // nested arrays are not kept by the reader; write them empty
    } else if (is_float_type(v.elem_type)) {
      o.put<uint64_t>(v.floats.size());
      for (double d : v.floats) put_number(o, v.elem_type, 0, 0, d);
    } else {
      o.put<uint64_t>(v.ints.size());
      for (int64_t i : v.ints) put_number(o, v.elem_type, i, static_cast<uint64_t>(i), 0);
    }
    return {};
  }
  if (v.type == GgufValueType::STRING) {
    const auto* s = std::get_if<std::string>(&v.scalar);
    if (!s) return Status::invalid_argument("metadata '" + key + "': string type, no string");
    o.str(*s);
    return {};
  }
  if (std::holds_alternative<std::string>(v.scalar))
    return Status::invalid_argument("metadata '" + key + "': numeric type holds a string");
  // Widen whatever the variant holds to all three views; put_number picks by type.
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, double>) {
          d = x;
          if (x > -9.2e18 && x < 9.2e18) {  // an integer type given a double: convert in range
            i = static_cast<int64_t>(x);
            u = static_cast<uint64_t>(i);
          }
        } else if constexpr (!std::is_same_v<X, std::string>) {
          i = static_cast<int64_t>(x);
          u = static_cast<uint64_t>(x);
          d = static_cast<double>(x);
        }
      },
      v.scalar);
  if (static_cast<uint32_t>(v.type) > static_cast<uint32_t>(GgufValueType::FLOAT64))
    return Status::invalid_argument("metadata '" + key + "': unknown value type");
  put_number(o, v.type, i, u, d);
  return {};
}

GgufValue scalar_value(GgufValueType t, decltype(GgufValue::scalar) s) {
  GgufValue v;
  v.type = t;
  v.scalar = std::move(s);
  return v;
}

GgufValue array_value(GgufValueType elem) {
  GgufValue v;
  v.type = GgufValueType::ARRAY;
  v.elem_type = elem;
  return v;
}

}  // namespace

void GgufWriter::set_value(const std::string& key, const GgufValue& v) {
  for (auto& [k, old] : kv_) {
    if (k == key) {  // replace in place: the key keeps its position
      old = v;
      return;
    }
  }
  kv_.emplace_back(key, v);
}

void GgufWriter::set_string(const std::string& key, const std::string& v) {
  set_value(key, scalar_value(GgufValueType::STRING, v));
}
void GgufWriter::set_bool(const std::string& key, bool v) {
  set_value(key, scalar_value(GgufValueType::BOOL, v));
}
void GgufWriter::set_u32(const std::string& key, uint32_t v) {
  set_value(key, scalar_value(GgufValueType::UINT32, uint64_t{v}));
}
void GgufWriter::set_i32(const std::string& key, int32_t v) {
  set_value(key, scalar_value(GgufValueType::INT32, int64_t{v}));
}
void GgufWriter::set_u64(const std::string& key, uint64_t v) {
  set_value(key, scalar_value(GgufValueType::UINT64, v));
}
void GgufWriter::set_f32(const std::string& key, float v) {
  set_value(key, scalar_value(GgufValueType::FLOAT32, static_cast<double>(v)));
}
void GgufWriter::set_string_array(const std::string& key, const std::vector<std::string>& v) {
  GgufValue a = array_value(GgufValueType::STRING);
  a.strings = v;
  set_value(key, a);
}
void GgufWriter::set_f32_array(const std::string& key, const std::vector<float>& v) {
  GgufValue a = array_value(GgufValueType::FLOAT32);
  a.floats.assign(v.begin(), v.end());
  set_value(key, a);
}
void GgufWriter::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  GgufValue a = array_value(GgufValueType::INT32);
  a.ints.assign(v.begin(), v.end());
  set_value(key, a);
}
void GgufWriter::set_u32_array(const std::string& key, const std::vector<uint32_t>& v) {
  GgufValue a = array_value(GgufValueType::UINT32);
  a.ints.assign(v.begin(), v.end());
  set_value(key, a);
}

Status GgufWriter::add_tensor_chunked(const std::string& name, DType dtype,
                                      const std::vector<int64_t>& shape, uint64_t nbytes,
                                      ChunkProducer produce) {
  if (name.empty()) return Status::invalid_argument("tensor with an empty name");
  for (const PendingTensor& t : tensors_)
    if (t.name == name) return Status::invalid_argument("duplicate tensor name '" + name + "'");
  if (shape.size() > 4)
    return Status::invalid_argument("tensor '" + name + "' has more than 4 dimensions");
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && numel > std::numeric_limits<int64_t>::max() / d))
      return Status::invalid_argument("tensor '" + name + "' has a bad shape");
    numel *= d;
  }
  if (!produce) return Status::invalid_argument("tensor '" + name + "' has no producer");
  int64_t be = 0, bb = 0;
  if (dtype_block_info(dtype, &be, &bb)) {
    const int64_t inner = shape.empty() ? 1 : shape.back();
    if (inner % be != 0)
      return Status::invalid_argument("tensor '" + name + "' row of " + std::to_string(inner) +
                                      " is not a multiple of the " + dtype_name(dtype) +
                                      " block size " + std::to_string(be));
    const uint64_t want = static_cast<uint64_t>(numel / be) * static_cast<uint64_t>(bb);
    if (nbytes != want)
      return Status::invalid_argument("tensor '" + name + "' " + dtype_name(dtype) + " " +
                                      "needs " + std::to_string(want) + " bytes, given " +
                                      std::to_string(nbytes));
  } else if (static_cast<uint32_t>(dtype) < kFirstPackedType) {
    return Status::unsupported("tensor '" + name + "' has unknown type id " +
                               std::to_string(static_cast<uint32_t>(dtype)));
  }
  tensors_.push_back({name, dtype, shape, nbytes, std::move(produce)});
  return {};
}

Status GgufWriter::add_tensor_sized(const std::string& name, DType dtype,
                                    const std::vector<int64_t>& shape, uint64_t nbytes,
                                    Producer produce) {
  if (!produce) return Status::invalid_argument("tensor '" + name + "' has no producer");
  // A whole-tensor producer needs a buffer of the tensor; it lives only while it is written.
  ChunkProducer whole = [produce = std::move(produce), nbytes](const ChunkSink& sink) -> Status {
    std::vector<uint8_t> buf(nbytes, 0);
    RETURN_IF_ERROR(produce(buf.data(), nbytes));
    return sink(buf.data(), nbytes);
  };
  return add_tensor_chunked(name, dtype, shape, nbytes, std::move(whole));
}

Status GgufWriter::add_tensor(const std::string& name, DType dtype,
                              const std::vector<int64_t>& shape, Producer produce) {
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && numel > std::numeric_limits<int64_t>::max() / d))
      return Status::invalid_argument("tensor '" + name + "' has a bad shape");
    numel *= d;
  }
  int64_t be = 0, bb = 0;
  if (!dtype_block_info(dtype, &be, &bb))
    return Status::unsupported("tensor '" + name + "': type id " +
                               std::to_string(static_cast<uint32_t>(dtype)) +
                               " has no known size; use add_tensor_sized");
  const uint64_t nbytes = static_cast<uint64_t>(numel / be) * static_cast<uint64_t>(bb);
  return add_tensor_sized(name, dtype, shape, nbytes, std::move(produce));
}

Status GgufWriter::add_tensor(const std::string& name, DType dtype,
                              const std::vector<int64_t>& shape, const void* data,
                              uint64_t nbytes) {
  // Written straight from the caller's bytes: no copy.
  ChunkProducer copy = [data, nbytes](const ChunkSink& sink) { return sink(data, nbytes); };
  return add_tensor_chunked(name, dtype, shape, nbytes, std::move(copy));
}

namespace {

// Streams header, metadata, tensor infos and tensor data. `kv` already carries a matching
// general.alignment when alignment != 32.
struct TensorOut {
  const std::string& name;
  DType dtype;
  const std::vector<int64_t>& shape;  // row-major
  uint64_t nbytes;
  const GgufWriter::ChunkProducer& produce;
};

// Runs one tensor's producer, writing each piece as it comes; the pieces must add up to
// exactly t.nbytes.
Status write_tensor_data(Out& o, const TensorOut& t) {
  uint64_t written = 0;
  GgufWriter::ChunkSink sink = [&](const void* data, uint64_t n) -> Status {
    if (n > t.nbytes - written)
      return Status::internal("producer gave more than the stated " + std::to_string(t.nbytes) +
                              " bytes");
    o.bytes(data, n);
    written += n;
    if (!o.ok()) return Status::io_error(std::string("write failed: ") + std::strerror(errno));
    return {};
  };
  Status st = t.produce(sink);
  if (st.ok() && written != t.nbytes)
    st = Status::internal("producer gave " + std::to_string(written) + " of " +
                          std::to_string(t.nbytes) + " bytes");
  return st;
}

Status write_body(FILE* f, const std::vector<std::pair<std::string, GgufValue>>& kv,
                  const std::vector<TensorOut>& tensors, uint64_t alignment) {
  Out o(f);
  o.put<uint32_t>(kGgufMagic);
  o.put<uint32_t>(kGgufVersion);
  o.put<uint64_t>(tensors.size());
  o.put<uint64_t>(kv.size());
  for (const auto& [k, v] : kv) {
    o.str(k);
    RETURN_IF_ERROR(write_value(o, k, v));
  }
  uint64_t offset = 0;
  for (const TensorOut& t : tensors) {
    o.str(t.name);
    o.put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it)  // ne[]: innermost first
      o.put<uint64_t>(static_cast<uint64_t>(*it));
    o.put<uint32_t>(static_cast<uint32_t>(t.dtype));
    o.put<uint64_t>(offset);
    offset = align_up(offset + t.nbytes, alignment);
  }
  o.pad_to(alignment);
  for (const TensorOut& t : tensors) {
    Status st = write_tensor_data(o, t);
    if (!st.ok()) return st.with_context("producing tensor '" + t.name + "'");
    o.pad_to(alignment);
    if (!o.ok()) break;
  }
  if (!o.ok()) return Status::io_error(std::string("write failed: ") + std::strerror(errno));
  return {};
}

}  // namespace

Status GgufWriter::write(const std::string& path, uint64_t alignment) const {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > (1u << 30))
    return Status::invalid_argument(path + ": alignment " + std::to_string(alignment) +
                                    " is not a power of two");
  std::vector<std::pair<std::string, GgufValue>> kv = kv_;
  bool have_alignment = false;
  for (const auto& [k, v] : kv) {
    if (k != "general.alignment") continue;
    const auto* u = std::get_if<uint64_t>(&v.scalar);
    if (v.type != GgufValueType::UINT32 || !u || *u != alignment)
      return Status::invalid_argument(path + ": general.alignment metadata disagrees with the "
                                      "write alignment " + std::to_string(alignment));
    have_alignment = true;
  }
  if (!have_alignment && alignment != kDefaultAlignment) {
    GgufValue a;
    a.type = GgufValueType::UINT32;
    a.scalar = alignment;
    kv.emplace_back("general.alignment", a);
  }
  std::vector<TensorOut> tensors;
  for (const PendingTensor& t : tensors_)
    tensors.push_back({t.name, t.dtype, t.shape, t.nbytes, t.produce});
  return write_file_atomically(path,
                               [&](std::FILE* f) { return write_body(f, kv, tensors, alignment); });
}

}  // namespace edge
