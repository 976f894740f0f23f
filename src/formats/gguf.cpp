// GGUF metadata access: value type names and the typed getters of GgufFile.
// The parser lives in gguf_reader.cpp, the writer in gguf_writer.cpp.
#include "formats/gguf.h"

#include <limits>

namespace edge {

const char* gguf_value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8: return "uint8";
    case GgufValueType::INT8: return "int8";
    case GgufValueType::UINT16: return "uint16";
    case GgufValueType::INT16: return "int16";
    case GgufValueType::UINT32: return "uint32";
    case GgufValueType::INT32: return "int32";
    case GgufValueType::FLOAT32: return "float32";
    case GgufValueType::BOOL: return "bool";
    case GgufValueType::STRING: return "string";
    case GgufValueType::ARRAY: return "array";
    case GgufValueType::UINT64: return "uint64";
    case GgufValueType::INT64: return "int64";
    case GgufValueType::FLOAT64: return "float64";
  }
  return "unknown";
}

namespace {

bool is_int_type(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8: case GgufValueType::INT8: case GgufValueType::UINT16:
    case GgufValueType::INT16: case GgufValueType::UINT32: case GgufValueType::INT32:
    case GgufValueType::UINT64: case GgufValueType::INT64:
      return true;
    default:
      return false;
  }
}

bool is_float_type(GgufValueType t) {
  return t == GgufValueType::FLOAT32 || t == GgufValueType::FLOAT64;
}

}  // namespace

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const auto& [k, v] : kv_)
    if (k == key) return &v;
  return nullptr;
}

// Shared prologue of the getters: the value or a not_found naming key and file.
#define GGUF_FIND_OR_RETURN(v, key)                                                      \
  const GgufValue* v = find(key);                                                        \
  if (!v) return Status::not_found(path() + ": metadata key '" + std::string(key) +    \
                                   "' not found")

static Status wrong_type(const std::string& path, std::string_view key, const GgufValue& v,
                         const char* wanted) {
  std::string found = gguf_value_type_name(v.type);
  if (v.type == GgufValueType::ARRAY)
    found += std::string(" of ") + gguf_value_type_name(v.elem_type);
  return Status::invalid_format(path + ": metadata '" + std::string(key) + "' is " + found +
                                ", expected " + wanted);
}

Expected<std::string> GgufFile::get_string(std::string_view key) const {
  GGUF_FIND_OR_RETURN(v, key);
  if (v->type != GgufValueType::STRING) return wrong_type(path(), key, *v, "string");
  return std::get<std::string>(v->scalar);
}

Expected<int64_t> GgufFile::get_int(std::string_view key) const {
  GGUF_FIND_OR_RETURN(v, key);
  if (!is_int_type(v->type)) return wrong_type(path(), key, *v, "an integer");
  if (auto* u = std::get_if<uint64_t>(&v->scalar)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return Status::out_of_range(path() + ": metadata '" + std::string(key) + "' value " +
                                  std::to_string(*u) + " does not fit int64");
    return static_cast<int64_t>(*u);
  }
  return std::get<int64_t>(v->scalar);
}

Expected<double> GgufFile::get_float(std::string_view key) const {
  GGUF_FIND_OR_RETURN(v, key);
  if (is_float_type(v->type)) return std::get<double>(v->scalar);
  if (!is_int_type(v->type)) return wrong_type(path(), key, *v, "a number");
  if (auto* u = std::get_if<uint64_t>(&v->scalar)) return static_cast<double>(*u);
  return static_cast<double>(std::get<int64_t>(v->scalar));
}

Expected<bool> GgufFile::get_bool(std::string_view key) const {
  GGUF_FIND_OR_RETURN(v, key);
  if (v->type != GgufValueType::BOOL) return wrong_type(path(), key, *v, "bool");
  return std::get<bool>(v->scalar);
}

Expected<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  GGUF_FIND_OR_RETURN(v, key);
  if (v->type != GgufValueType::ARRAY || v->elem_type != GgufValueType::STRING)
    return wrong_type(path(), key, *v, "array of string");
  return v->strings;
}

Expected<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  GGUF_FIND_OR_RETURN(v, key);
  // Bool arrays come back as 0/1: GgufValue keeps them in `ints` too.
  if (v->type != GgufValueType::ARRAY ||
      (!is_int_type(v->elem_type) && v->elem_type != GgufValueType::BOOL))
    return wrong_type(path(), key, *v, "array of integers");
  return v->ints;
}

Expected<std::vector<double>> GgufFile::get_float_array(std::string_view key) const {
  GGUF_FIND_OR_RETURN(v, key);
  if (v->type != GgufValueType::ARRAY) return wrong_type(path(), key, *v, "array of numbers");
  if (is_float_type(v->elem_type)) return v->floats;
  if (!is_int_type(v->elem_type)) return wrong_type(path(), key, *v, "array of numbers");
  std::vector<double> out(v->ints.begin(), v->ints.end());
  if (v->elem_type == GgufValueType::UINT64) {  // ints holds the bits; widen as unsigned
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<double>(static_cast<uint64_t>(v->ints[i]));
  }
  return out;
}

#undef GGUF_FIND_OR_RETURN

std::string GgufFile::get_string_or(std::string_view key, std::string def) const {
  auto r = get_string(key);
  return r.ok() ? std::move(r).value() : def;
}

int64_t GgufFile::get_int_or(std::string_view key, int64_t def) const {
  auto r = get_int(key);
  return r.ok() ? *r : def;
}

double GgufFile::get_float_or(std::string_view key, double def) const {
  auto r = get_float(key);
  return r.ok() ? *r : def;
}

bool GgufFile::get_bool_or(std::string_view key, bool def) const {
  auto r = get_bool(key);
  return r.ok() ? *r : def;
}

}  // namespace edge
