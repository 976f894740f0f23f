// GGUF reader. Layout (v2/v3, little-endian):
//   magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//   n_kv x { string key | u32 value_type | value }
//   n_tensors x { string name | u32 n_dims | u64 ne[n_dims] (innermost first) | u32 type |
//                 u64 offset (relative to the data section, a multiple of the alignment) }
//   padding to general.alignment (default 32) | data section
// A string is u64 length + bytes (no terminator). Every length and count is checked against
// the bytes that remain before anything is allocated, so a corrupt file cannot ask for a
// huge allocation or read past the mapping.
#include <bit>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "formats/gguf.h"

namespace edge {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader assumes a little-endian host");

namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr int kMaxArrayDepth = 4;  // nested arrays deeper than this are refused
constexpr uint32_t kMaxDims = 4;   // GGML_MAX_DIMS
// Smallest possible encodings, used to refuse counts no file of this size could hold.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;            // empty key, type, u8 value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // empty name, n_dims=0, type, offset

// A bounds-checked read position over the mapped bytes. memcpy keeps reads legal at any
// alignment (the header fields are not naturally aligned).
class Cursor {
 public:
  explicit Cursor(const MappedFile& f) : data_(f.data()), size_(f.size()), path_(f.path()) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  const std::string& path() const { return path_; }

  Status need(uint64_t n, const std::string& what) const {
    if (n <= remaining()) return {};
    return Status::invalid_format(path_ + ": truncated: " + what + " needs " +
                                  std::to_string(n) + " bytes at offset " +
                                  std::to_string(pos_) + " but the file has " +
                                  std::to_string(size_) + " bytes");
  }
  template <typename T>
  Status read(T* v, const std::string& what) {
    RETURN_IF_ERROR(need(sizeof(T), what));
    std::memcpy(v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return {};
  }
  Status skip(uint64_t n, const std::string& what) {
    RETURN_IF_ERROR(need(n, what));
    pos_ += n;
    return {};
  }
  // Fast path for long string arrays (vocabularies): no error text is built unless needed.
  bool try_read_string(std::string* s) {
    uint64_t len = 0;
    if (remaining() < 8) return false;
    std::memcpy(&len, data_ + pos_, 8);
    if (len > remaining() - 8) return false;
    s->assign(reinterpret_cast<const char*>(data_ + pos_ + 8), len);
    pos_ += 8 + len;
    return true;
  }
  Status read_string(std::string* s, const std::string& what) {
    uint64_t len = 0;
    RETURN_IF_ERROR(read(&len, "length of " + what));
    if (len > remaining())
      return Status::invalid_format(path_ + ": " + what + " at offset " + std::to_string(pos_) +
                                    " claims " + std::to_string(len) +
                                    " bytes, past the end of the file (" +
                                    std::to_string(size_) + " bytes)");
    s->assign(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return {};
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  std::string path_;
};

// Bytes of one scalar of a fixed-size type; 0 for STRING/ARRAY and unknown ids.
uint64_t scalar_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8: case GgufValueType::INT8: case GgufValueType::BOOL: return 1;
    case GgufValueType::UINT16: case GgufValueType::INT16: return 2;
    case GgufValueType::UINT32: case GgufValueType::INT32: case GgufValueType::FLOAT32: return 4;
    case GgufValueType::UINT64: case GgufValueType::INT64: case GgufValueType::FLOAT64: return 8;
    default: return 0;
  }
}

bool known_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::FLOAT64); }

// Reads one fixed-size scalar, widened: signed -> int64, unsigned -> uint64, floats -> double.
std::variant<int64_t, uint64_t, double, bool, std::string> decode_scalar(GgufValueType t,
                                                                         const uint8_t* p) {
  auto load = [p](auto v) { std::memcpy(&v, p, sizeof(v)); return v; };
  switch (t) {
    case GgufValueType::UINT8: return static_cast<uint64_t>(load(uint8_t{}));
    case GgufValueType::INT8: return static_cast<int64_t>(load(int8_t{}));
    case GgufValueType::UINT16: return static_cast<uint64_t>(load(uint16_t{}));
    case GgufValueType::INT16: return static_cast<int64_t>(load(int16_t{}));
    case GgufValueType::UINT32: return static_cast<uint64_t>(load(uint32_t{}));
    case GgufValueType::INT32: return static_cast<int64_t>(load(int32_t{}));
    case GgufValueType::FLOAT32: return static_cast<double>(load(float{}));
    case GgufValueType::BOOL: return load(uint8_t{}) != 0;
    case GgufValueType::UINT64: return load(uint64_t{});
    case GgufValueType::INT64: return load(int64_t{});
    case GgufValueType::FLOAT64: return load(double{});
    default: return int64_t{0};
  }
}

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // row-major
  uint32_t type = 0;
  uint64_t offset = 0;
  uint64_t nbytes = 0;
};

}  // namespace

// Parses a mapped file into a GgufFile; one method per section of the layout above.
class GgufReader {
 public:
  GgufReader(GgufFile* f, const GgufTypeResolver* extra) : f_(f), c_(*f->map_), extra_(extra) {}

  Status run() {
    RETURN_IF_ERROR(read_header());
    RETURN_IF_ERROR(read_metadata());
    RETURN_IF_ERROR(read_alignment());
    RETURN_IF_ERROR(read_tensor_infos());
    return place_tensors();
  }

 private:
  Status fail(const std::string& what) const {
    return Status::invalid_format(c_.path() + ": " + what);
  }

  Status read_header() {
    const uint64_t size = f_->map_->size();
    if (size < 4)
      return fail("not a GGUF file (only " + std::to_string(size) + " bytes, no magic)");
    uint32_t magic = 0, version = 0;
    RETURN_IF_ERROR(c_.read(&magic, "magic"));
    if (magic != kGgufMagic) return fail("not a GGUF file (bad magic)");
    RETURN_IF_ERROR(c_.read(&version, "version"));
    if (version == 1)
      return Status::unsupported(c_.path() +
                                 ": GGUF version 1 is not supported (only v2 and v3); "
                                 "re-convert the model with a current converter");
    if (version != 2 && version != 3) {
      if ((version & 0xffffu) == 0 && (version >> 16) != 0)
        return Status::unsupported(c_.path() + ": big-endian GGUF is not supported");
      return Status::unsupported(c_.path() + ": unsupported GGUF version " +
                                 std::to_string(version) + " (supported: 2, 3)");
    }
    f_->version_ = version;
    RETURN_IF_ERROR(c_.read(&n_tensors_, "tensor count"));
    RETURN_IF_ERROR(c_.read(&n_kv_, "metadata count"));
    if (n_kv_ > c_.remaining() / kMinKvBytes)
      return fail("metadata count " + std::to_string(n_kv_) + " is more than a file of " +
                  std::to_string(size) + " bytes can hold");
    if (n_tensors_ > c_.remaining() / kMinTensorInfoBytes)
      return fail("tensor count " + std::to_string(n_tensors_) + " is more than a file of " +
                  std::to_string(size) + " bytes can hold");
    return {};
  }

  Status read_metadata() {
    std::unordered_set<std::string> seen;
    f_->kv_.reserve(n_kv_);
    for (uint64_t i = 0; i < n_kv_; ++i) {
      std::string key;
      RETURN_IF_ERROR(c_.read_string(&key, "metadata key #" + std::to_string(i)));
      if (!seen.insert(key).second) return fail("duplicate metadata key '" + key + "'");
      uint32_t type = 0;
      RETURN_IF_ERROR(c_.read(&type, "value type of '" + key + "'"));
      GgufValue v;
      RETURN_IF_ERROR(read_value(key, type, &v));
      f_->kv_.emplace_back(std::move(key), std::move(v));
    }
    return {};
  }

  Status read_value(const std::string& key, uint32_t type, GgufValue* v) {
    if (!known_value_type(type))
      return fail("metadata '" + key + "' has unknown value type " + std::to_string(type));
    v->type = static_cast<GgufValueType>(type);
    if (v->type == GgufValueType::STRING) {
      std::string s;
      RETURN_IF_ERROR(c_.read_string(&s, "string value of '" + key + "'"));
      v->scalar = std::move(s);
      return {};
    }
    if (v->type == GgufValueType::ARRAY) return read_array(key, v);
    const uint64_t n = scalar_size(v->type);
    RETURN_IF_ERROR(c_.need(n, "value of '" + key + "'"));
    v->scalar = decode_scalar(v->type, f_->map_->data() + c_.pos());
    return c_.skip(n, "value of '" + key + "'");
  }

  // Reads an array header and checks its count against the remaining bytes.
  Status read_array_header(const std::string& key, GgufValueType* elem, uint64_t* count) {
    uint32_t et = 0;
    RETURN_IF_ERROR(c_.read(&et, "array element type of '" + key + "'"));
    if (!known_value_type(et))
      return fail("metadata array '" + key + "' has unknown element type " + std::to_string(et));
    RETURN_IF_ERROR(c_.read(count, "array length of '" + key + "'"));
    *elem = static_cast<GgufValueType>(et);
    uint64_t min_elem = scalar_size(*elem);
    if (*elem == GgufValueType::STRING) min_elem = 8;
    if (*elem == GgufValueType::ARRAY) min_elem = 12;
    if (*count > c_.remaining() / min_elem)
      return fail("metadata array '" + key + "' claims " + std::to_string(*count) + " " +
                  gguf_value_type_name(*elem) + " elements, past the end of the file");
    return {};
  }

  Status read_array(const std::string& key, GgufValue* v) {
    uint64_t count = 0;
    RETURN_IF_ERROR(read_array_header(key, &v->elem_type, &count));
    const GgufValueType et = v->elem_type;
    if (et == GgufValueType::ARRAY) {
      // Nested arrays carry nothing we use: walk them so the cursor stays right.
      for (uint64_t i = 0; i < count; ++i) RETURN_IF_ERROR(skip_array(key, 1));
      return {};
    }
    if (et == GgufValueType::STRING) {
      v->strings.resize(count);
      for (uint64_t i = 0; i < count; ++i) {
        if (c_.try_read_string(&v->strings[i])) continue;
        return c_.read_string(&v->strings[i], "element " + std::to_string(i) + " of '" + key + "'");
      }
      return {};
    }
    const uint64_t es = scalar_size(et);
    const uint8_t* p = f_->map_->data() + c_.pos();
    const bool is_float = et == GgufValueType::FLOAT32 || et == GgufValueType::FLOAT64;
    if (is_float) v->floats.resize(count); else v->ints.resize(count);
    for (uint64_t i = 0; i < count; ++i) {
      auto s = decode_scalar(et, p + i * es);
      if (is_float) v->floats[i] = std::get<double>(s);
      else if (auto* b = std::get_if<bool>(&s)) v->ints[i] = *b ? 1 : 0;
      else if (auto* u = std::get_if<uint64_t>(&s)) v->ints[i] = static_cast<int64_t>(*u);
      else v->ints[i] = std::get<int64_t>(s);
    }
    return c_.skip(count * es, "array '" + key + "'");
  }

  Status skip_array(const std::string& key, int depth) {
    if (depth > kMaxArrayDepth)
      return fail("metadata array '" + key + "' nests deeper than " +
                  std::to_string(kMaxArrayDepth) + " levels");
    GgufValueType et;
    uint64_t count = 0;
    RETURN_IF_ERROR(read_array_header(key, &et, &count));
    if (et == GgufValueType::ARRAY) {
      for (uint64_t i = 0; i < count; ++i) RETURN_IF_ERROR(skip_array(key, depth + 1));
    } else if (et == GgufValueType::STRING) {
      std::string s;
      for (uint64_t i = 0; i < count; ++i)
        RETURN_IF_ERROR(c_.read_string(&s, "nested string in '" + key + "'"));
    } else {
      RETURN_IF_ERROR(c_.skip(count * scalar_size(et), "nested array in '" + key + "'"));
    }
    return {};
  }

  Status read_alignment() {
    const GgufValue* a = f_->find("general.alignment");
    if (!a) return {};
    if (a->type != GgufValueType::UINT32)
      return fail(std::string("general.alignment must be uint32, found ") +
                  gguf_value_type_name(a->type));
    uint64_t al = std::get<uint64_t>(a->scalar);
    if (al == 0 || (al & (al - 1)) != 0)
      return fail("general.alignment " + std::to_string(al) + " is not a power of two");
    f_->alignment_ = al;
    return {};
  }

  Status read_tensor_infos();
  Status read_one_info(uint64_t i, TensorInfo* t);
  Status size_tensor(TensorInfo* t, const std::vector<uint64_t>& ne);
  Status place_tensors();

  GgufFile* f_;
  Cursor c_;
  const GgufTypeResolver* extra_;
  uint64_t n_tensors_ = 0, n_kv_ = 0;
  std::vector<TensorInfo> infos_;
};

Status GgufReader::read_tensor_infos() {
  infos_.resize(n_tensors_);
  for (uint64_t i = 0; i < n_tensors_; ++i) RETURN_IF_ERROR(read_one_info(i, &infos_[i]));
  return {};
}

Status GgufReader::read_one_info(uint64_t i, TensorInfo* t) {
  RETURN_IF_ERROR(c_.read_string(&t->name, "name of tensor #" + std::to_string(i)));
  const std::string what = "tensor '" + t->name + "'";
  uint32_t n_dims = 0;
  RETURN_IF_ERROR(c_.read(&n_dims, "n_dims of " + what));
  if (n_dims > kMaxDims)
    return fail(what + " has " + std::to_string(n_dims) + " dimensions (at most " +
                std::to_string(kMaxDims) + ")");
  std::vector<uint64_t> ne(n_dims);
  for (uint32_t d = 0; d < n_dims; ++d) RETURN_IF_ERROR(c_.read(&ne[d], "ne of " + what));
  RETURN_IF_ERROR(c_.read(&t->type, "type of " + what));
  RETURN_IF_ERROR(c_.read(&t->offset, "data offset of " + what));
  return size_tensor(t, ne);
}

// Checks the dimensions (ne innermost first) and computes the row-major shape and byte size.
Status GgufReader::size_tensor(TensorInfo* t, const std::vector<uint64_t>& ne) {
  const std::string what = "tensor '" + t->name + "'";
  uint64_t numel = 1;
  bool zero = false;
  for (uint64_t d : ne) {
    if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return fail(what + " has dimension " + std::to_string(d) + ", too large");
    if (d == 0) zero = true;
    else if (numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / d)
      return fail(what + " element count overflows");
    else numel *= d;
  }
  if (zero) numel = 0;
  t->shape.assign(ne.rbegin(), ne.rend());
  int64_t be = 0, bb = 0;
  // U8 is safetensors' alone: a GGUF file naming its id is as unknown as any other.
  bool known = static_cast<DType>(t->type) != DType::U8 &&
               dtype_block_info(static_cast<DType>(t->type), &be, &bb);
  if (!known && extra_ && *extra_) known = (*extra_)(t->type, &be, &bb) && be > 0 && bb > 0;
  if (!known)
    return Status::unsupported(c_.path() + ": " + what + " has unknown type id " +
                               std::to_string(t->type));
  const uint64_t inner = ne.empty() ? 1 : ne[0];
  if (inner % static_cast<uint64_t>(be) != 0)
    return fail(what + " row of " + std::to_string(inner) + " elements is not a multiple of the " +
                dtype_name(static_cast<DType>(t->type)) + " block size " + std::to_string(be));
  const uint64_t blocks = numel / static_cast<uint64_t>(be);
  if (blocks > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(bb))
    return fail(what + " byte size overflows");
  t->nbytes = blocks * static_cast<uint64_t>(bb);
  return {};
}

// The data section starts at the next alignment boundary after the infos; each tensor must
// be aligned inside it and end within the file.
Status GgufReader::place_tensors() {
  const MappedFile& m = *f_->map_;
  const uint64_t al = f_->alignment_;
  const uint64_t pos = c_.pos();
  f_->data_offset_ = pos + (al - pos % al) % al;
  for (TensorInfo& t : infos_) {
    const std::string what = "tensor '" + t.name + "'";
    if (t.offset % al != 0)
      return fail(what + " data offset " + std::to_string(t.offset) +
                  " is not a multiple of the alignment " + std::to_string(al));
    if (t.offset > std::numeric_limits<uint64_t>::max() - f_->data_offset_ ||
        !m.contains(f_->data_offset_ + t.offset, t.nbytes))
      return fail(what + " data lies past the end of the file (data section at " +
                  std::to_string(f_->data_offset_) + ", tensor offset " +
                  std::to_string(t.offset) + ", size " + std::to_string(t.nbytes) +
                  " bytes, file size " + std::to_string(m.size()) + ")");
    TensorView v;
    v.name = std::move(t.name);
    v.dtype = static_cast<DType>(t.type);
    v.shape = std::move(t.shape);
    v.data = m.data() + f_->data_offset_ + t.offset;
    v.nbytes = t.nbytes;
    Status st = f_->tensors_.add(std::move(v));
    if (!st.ok()) return st.with_context(c_.path());
  }
  return {};
}

Expected<GgufFile> GgufFile::from_mapped(MappedFile file, const GgufTypeResolver& extra_types) {
  GgufFile f;
  f.map_ = std::make_unique<MappedFile>(std::move(file));
  GgufReader r(&f, &extra_types);
  RETURN_IF_ERROR(r.run());
  return f;
}

Expected<GgufFile> GgufFile::open(const std::string& path, const GgufTypeResolver& extra_types) {
  auto map = MappedFile::open(path);
  if (!map) return map.status();
  return from_mapped(std::move(map).value(), extra_types);
}

Expected<GgufFile> GgufFile::open(const std::string& path) {
  return open(path, GgufTypeResolver());
}

}  // namespace edge
