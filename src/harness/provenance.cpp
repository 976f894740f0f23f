#include "harness/provenance.h"

#include "quant/packed.h"

#include <edge_build_info.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/cpu_info.h"
#include "model/model.h"

namespace edge {

std::string iso_time_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string file_fingerprint(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return "directory";
  std::ifstream in(path, std::ios::binary);
  if (!in) return "unreadable";
  in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t offset) {
    std::vector<char> buf(1 << 20);
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    for (std::streamsize i = 0; i < in.gcount(); ++i) h = (h ^ static_cast<uint8_t>(buf[i])) * 1099511628211ull;
    in.clear();
  };
  mix(0);
  if (size > (2u << 20)) mix(size - (1u << 20));
  char out[64];
  std::snprintf(out, sizeof out, "size%llu-fnv%016llx", static_cast<unsigned long long>(size),
                static_cast<unsigned long long>(h));
  return out;
}

nlohmann::json machine_provenance() {
  const CpuInfo& cpu = cpu_info();
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return {{"commit", EDGE_BUILD_COMMIT},
          {"build_flags", EDGE_BUILD_FLAGS},
          {"cpu", cpu.model_name},
          {"cpu_features", cpu.features_string()},
          {"cpu_features_capped_by", cpu.capped_by},
          {"allowed_cpus", cpu.allowed_cpus},
          {"physical_cores", cpu.physical_cores},
          {"cache_bytes", {{"l1d", cpu.caches.l1d}, {"l2", cpu.caches.l2}, {"l3", cpu.caches.l3}}},
          {"host", host},
          {"time", iso_time_now()}};
}

nlohmann::json model_provenance(const Model& model) {
  std::map<std::string, std::pair<int64_t, uint64_t>> by_type;  // type -> (count, bytes)
  auto count = [&](const TensorView& t) {
    if (!t.data) return;
    // Packed types have no GGUF name: report the layout (e.g. "w4s_g128") and the
    // activation mode actually in use, read back from the engine.
    PackedFormat pf;
    const std::string name = packed_format_of(t.dtype, &pf)
                                 ? pf.name() + (model.kernels().packed_int8_activations ? "+a8" : "+a16")
                                 : std::string(dtype_name(t.dtype));
    auto& e = by_type[name];
    e.first++;
    e.second += t.nbytes;
  };
  const ModelWeights& w = model.weights();
  count(w.token_embd);
  if (w.output.data != w.token_embd.data) count(w.output);
  for (const LayerWeights& l : w.layers)
    for (const TensorView* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.ssm_qkv,
                                &l.ssm_z, &l.ssm_alpha, &l.ssm_beta, &l.ssm_out})
      count(*t);
  nlohmann::json types = nlohmann::json::object();
  for (const auto& [name, e] : by_type) types[name] = {{"tensors", e.first}, {"bytes", e.second}};
  std::error_code ec;
  uint64_t file_size = std::filesystem::is_regular_file(model.path(), ec)
                           ? std::filesystem::file_size(model.path(), ec) : 0;
  return {{"model_file", model.path()},
          {"model_format", model_format_name(model.format())},
          {"model_fingerprint", file_fingerprint(model.path())},
          {"model_file_bytes", file_size},
          {"architecture", model.config().arch},
          {"kernel_path", model.kernels().name},
          {"weight_types", types},
          {"tied_output", w.output.data == w.token_embd.data},
          {"n_threads", model.pool().size()}};
}

}  // namespace edge
