// Safetensors reader (mmap, every offset checked against the buffer) and writer.
#include "formats/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "core/atomic_file.h"

namespace edge {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // a header past 100 MiB is corrupt

struct StDType {
  const char* name;
  DType dtype;
};
constexpr StDType kStDTypes[] = {
    {"F32", DType::F32}, {"F16", DType::F16}, {"BF16", DType::BF16}, {"F64", DType::F64},
    {"I8", DType::I8},   {"I16", DType::I16}, {"I32", DType::I32},   {"I64", DType::I64},
    {"U8", DType::U8},
};

bool is_nonneg_int(const json& j) {
  return j.is_number_unsigned() || (j.is_number_integer() && j.get<int64_t>() >= 0);
}

struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

// Validates one tensor entry of the header against the data buffer of `buf_size` bytes.
Status parse_entry(const std::string& path, const std::string& name, const json& j,
                   uint64_t buf_size, Entry* e) {
  const std::string what = path + ": tensor '" + name + "'";
  if (!j.is_object()) return Status::invalid_format(what + ": header entry is not an object");
  auto dt = j.find("dtype");
  auto sh = j.find("shape");
  auto off = j.find("data_offsets");
  if (dt == j.end() || !dt->is_string()) return Status::invalid_format(what + ": missing dtype");
  if (sh == j.end() || !sh->is_array()) return Status::invalid_format(what + ": missing shape");
  if (off == j.end() || !off->is_array() || off->size() != 2 || !is_nonneg_int((*off)[0]) ||
      !is_nonneg_int((*off)[1]))
    return Status::invalid_format(what + ": data_offsets must be [begin, end]");
  const std::string dts = dt->get<std::string>();
  bool known = false;
  for (const StDType& d : kStDTypes)
    if (dts == d.name) { e->dtype = d.dtype; known = true; }
  if (!known) return Status::unsupported(what + ": dtype " + dts + " is not supported");
  e->name = name;
  uint64_t numel = 1;
  for (const json& d : *sh) {
    if (!is_nonneg_int(d)) return Status::invalid_format(what + ": shape entries must be >= 0");
    const uint64_t v = d.get<uint64_t>();
    if (v > 0 && numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / v)
      return Status::invalid_format(what + ": shape overflows");
    numel *= v;
    e->shape.push_back(static_cast<int64_t>(v));
  }
  e->begin = (*off)[0].get<uint64_t>();
  e->end = (*off)[1].get<uint64_t>();
  if (e->begin > e->end || e->end > buf_size)
    return Status::invalid_format(what + ": data_offsets [" + std::to_string(e->begin) + ", " +
                                  std::to_string(e->end) + ") outside the data buffer of " +
                                  std::to_string(buf_size) + " bytes");
  int64_t be = 0, bb = 0;
  dtype_block_info(e->dtype, &be, &bb);
  if (numel > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(bb) ||
      numel * static_cast<uint64_t>(bb) != e->end - e->begin)
    return Status::invalid_format(what + ": shape " + sh->dump() + " of " + dts + " needs " +
                                  std::to_string(numel * static_cast<uint64_t>(bb)) +
                                  " bytes but data_offsets span " +
                                  std::to_string(e->end - e->begin));
  return {};
}

Expected<json> parse_json(const std::string& what, const char* begin, const char* end) {
  try {
    return json::parse(begin, end);
  } catch (const json::exception& ex) {
    return Status::invalid_format(what + ": bad JSON: " + ex.what());
  }
}

bool is_plain_file_name(const std::string& f) {
  return !f.empty() && f.find('/') == std::string::npos && f != "." && f != "..";
}

}  // namespace

const char* safetensors_dtype_name(DType t) {
  for (const StDType& d : kStDTypes)
    if (d.dtype == t) return d.name;
  return nullptr;
}

Status SafetensorsModel::add_file(const std::string& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped) return mapped.status();
  return add_mapped(std::move(mapped).value());
}

Status SafetensorsModel::add_mapped(MappedFile file) {
  maps_.push_back(std::make_unique<MappedFile>(std::move(file)));
  const MappedFile& m = *maps_.back();
  const std::string& path = m.path();
  if (m.size() < 8)
    return Status::invalid_format(path + ": too small for a safetensors header (" +
                                  std::to_string(m.size()) + " bytes)");
  uint64_t n = 0;
  std::memcpy(&n, m.data(), 8);
  if (n > m.size() - 8 || n > kMaxHeaderBytes)
    return Status::invalid_format(path + ": header length " + std::to_string(n) +
                                  " does not fit in a file of " + std::to_string(m.size()) +
                                  " bytes");
  const char* h = reinterpret_cast<const char*>(m.data() + 8);
  ASSIGN_OR_RETURN(json header, parse_json(path, h, h + n));
  if (!header.is_object()) return Status::invalid_format(path + ": header is not a JSON object");
  const uint64_t buf_off = 8 + n, buf_size = m.size() - buf_off;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) return Status::invalid_format(path + ": __metadata__ is not an object");
      for (auto mi = it->begin(); mi != it->end(); ++mi)
        metadata_[mi.key()] = mi->is_string() ? mi->get<std::string>() : mi->dump();
      continue;
    }
    Entry e;
    RETURN_IF_ERROR(parse_entry(path, it.key(), *it, buf_size, &e));
    entries.push_back(std::move(e));
  }
  // File order, so views walk the mapping front to back.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.name < b.name;
  });
  for (Entry& e : entries) {
    TensorView v;
    v.name = std::move(e.name);
    v.dtype = e.dtype;
    v.shape = std::move(e.shape);
    v.data = m.data() + buf_off + e.begin;
    v.nbytes = e.end - e.begin;
    Status st = tensors_.add(std::move(v));
    if (!st.ok()) return st.with_context(path);
  }
  return {};
}

Status SafetensorsModel::open_sharded(const std::string& dir, const std::string& index_path) {
  auto text = read_text_file(index_path);
  if (!text) return text.status();
  ASSIGN_OR_RETURN(json index, parse_json(index_path, text->data(), text->data() + text->size()));
  auto wm = index.is_object() ? index.find("weight_map") : index.end();
  if (wm == index.end() || !wm->is_object())
    return Status::invalid_format(index_path + ": no \"weight_map\" object");
  std::set<std::string> shards;
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!it->is_string() || !is_plain_file_name(it->get<std::string>()))
      return Status::invalid_format(index_path + ": weight_map entry for '" + it.key() +
                                    "' is not a file name in the directory");
    shards.insert(it->get<std::string>());
  }
  if (shards.empty()) return Status::invalid_format(index_path + ": weight_map is empty");
  std::map<std::string, size_t> shard_map_index;
  for (const std::string& s : shards) {
    const std::string p = (fs::path(dir) / s).string();
    std::error_code ec;
    if (!fs::exists(p, ec))
      return Status::not_found(index_path + ": shard file " + s + " is missing from " + dir);
    RETURN_IF_ERROR(add_file(p));
    shard_map_index[s] = maps_.size() - 1;
  }
  // Each tensor the index names must be in the shard it names.
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    const std::string shard = it->get<std::string>();
    const TensorView* v = tensors_.find(it.key());
    const MappedFile& m = *maps_[shard_map_index[shard]];
    const auto at = reinterpret_cast<uintptr_t>(v ? v->data : nullptr);
    const auto lo = reinterpret_cast<uintptr_t>(m.data());
    if (!v || at < lo || at > lo + m.size())
      return Status::invalid_format(index_path + ": tensor '" + it.key() + "' is listed in " +
                                    shard + " but that shard does not hold it");
  }
  return {};
}

Expected<SafetensorsModel> SafetensorsModel::from_mapped(MappedFile file) {
  SafetensorsModel model;
  RETURN_IF_ERROR(model.add_mapped(std::move(file)));
  return model;
}

Expected<SafetensorsModel> SafetensorsModel::open(const std::string& path_or_dir) {
  SafetensorsModel model;
  std::error_code ec;
  if (!fs::is_directory(path_or_dir, ec)) {
    RETURN_IF_ERROR(model.add_file(path_or_dir));
    return model;
  }
  const std::string single = (fs::path(path_or_dir) / "model.safetensors").string();
  const std::string index = (fs::path(path_or_dir) / "model.safetensors.index.json").string();
  if (fs::exists(single, ec)) {
    RETURN_IF_ERROR(model.add_file(single));
  } else if (fs::exists(index, ec)) {
    RETURN_IF_ERROR(model.open_sharded(path_or_dir, index));
  } else {
    return Status::not_found(path_or_dir +
                             ": no model.safetensors or model.safetensors.index.json");
  }
  return model;
}

// ---- writer ----

namespace {

Status check_writable(const TensorView& t) {
  const char* dn = safetensors_dtype_name(t.dtype);
  if (!dn)
    return Status::unsupported("tensor '" + t.name + "': dtype " + dtype_name(t.dtype) +
                               " cannot be stored in safetensors");
  if (t.name.empty() || t.name == "__metadata__")
    return Status::invalid_argument("bad tensor name '" + t.name + "'");
  for (int64_t d : t.shape)
    if (d < 0) return Status::invalid_argument("tensor '" + t.name + "' has a negative dim");
  auto want = dtype_row_bytes(t.dtype, t.numel());
  if (!want) return want.status().with_context("tensor '" + t.name + "'");
  if (*want != t.nbytes)
    return Status::invalid_argument("tensor '" + t.name + "' " + t.shape_string() + " " + dn +
                                    " needs " + std::to_string(*want) + " bytes, view has " +
                                    std::to_string(t.nbytes));
  if (t.nbytes && !t.data) return Status::invalid_argument("tensor '" + t.name + "' has no data");
  return {};
}

Status write_st_body(FILE* f, const std::string& header, const std::vector<TensorView>& tensors) {
  const uint64_t n = header.size();
  bool ok = std::fwrite(&n, 1, 8, f) == 8 && std::fwrite(header.data(), 1, n, f) == n;
  for (const TensorView& t : tensors) {
    if (!ok) break;
    ok = t.nbytes == 0 || std::fwrite(t.data, 1, t.nbytes, f) == t.nbytes;
  }
  return ok ? Status() : Status::io_error(std::string("write failed: ") + std::strerror(errno));
}

}  // namespace

Status write_safetensors(const std::string& path, const std::vector<TensorView>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const TensorView& t : tensors) {
    RETURN_IF_ERROR(check_writable(t).with_context(path));
    if (!names.insert(t.name).second)
      return Status::invalid_argument(path + ": duplicate tensor name '" + t.name + "'");
    header[t.name] = {{"dtype", safetensors_dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.nbytes}}};
    offset += t.nbytes;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // the data buffer starts 8-byte aligned
  return write_file_atomically(path, [&](std::FILE* f) { return write_st_body(f, h, tensors); });
}

Status write_safetensors_sharded(const std::string& dir, const std::vector<TensorView>& tensors,
                                 uint64_t max_shard_bytes,
                                 const std::map<std::string, std::string>& metadata) {
  std::vector<std::vector<TensorView>> shards;
  uint64_t cur = 0, total = 0;
  for (const TensorView& t : tensors) {
    if (shards.empty() || (cur > 0 && cur + t.nbytes > max_shard_bytes)) {
      shards.emplace_back();
      cur = 0;
    }
    shards.back().push_back(t);
    cur += t.nbytes;
    total += t.nbytes;
  }
  if (shards.empty()) return Status::invalid_argument(dir + ": no tensors to write");
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    RETURN_IF_ERROR(write_safetensors((fs::path(dir) / name).string(), shards[i], metadata));
    for (const TensorView& t : shards[i]) weight_map[t.name] = name;
  }
  nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}},
                                  {"weight_map", weight_map}};
  const std::string text = index.dump(2);
  return write_file((fs::path(dir) / "model.safetensors.index.json").string(), text.data(),
                    text.size());
}

}  // namespace edge
