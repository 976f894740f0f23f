#include "pipeline/graph/artifact.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace edge::pipeline {

Expected<std::string> sha256_file(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return Status::not_found(path + ": cannot open the artifact");
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    return Status::internal("sha256: cannot initialise the digest");
  std::vector<unsigned char> buf(1 << 20);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0)
    if (EVP_DigestUpdate(ctx.get(), buf.data(), n) != 1)
      return Status::internal("sha256: digest failed");
  if (std::ferror(f.get())) return Status::io_error(path + ": read error while hashing");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md, &len) != 1)
    return Status::internal("sha256: digest failed");
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

namespace {

struct Schemes {
  std::mutex mu;
  std::map<std::string, ArtifactResolver> resolvers;
};

Schemes& schemes() {
  static Schemes s;
  return s;
}

}  // namespace

void register_artifact_scheme(const std::string& scheme, ArtifactResolver resolve) {
  Schemes& s = schemes();
  std::lock_guard<std::mutex> l(s.mu);
  s.resolvers[scheme] = std::move(resolve);
}

bool is_symbolic_path(const std::string& path) {
  const size_t colon = path.find(':');
  if (colon == std::string::npos || colon < 2) return false;
  for (size_t i = 0; i < colon; ++i) {
    const char c = path[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

Status resolve_symbolic_artifact(Artifact* a) {
  if (!is_symbolic_path(a->path)) return Status();
  const size_t colon = a->path.find(':');
  const std::string scheme = a->path.substr(0, colon), name = a->path.substr(colon + 1);
  ArtifactResolver resolve;
  {
    Schemes& s = schemes();
    std::lock_guard<std::mutex> l(s.mu);
    auto it = s.resolvers.find(scheme);
    if (it == s.resolvers.end())
      return Status::invalid_argument(fmt::format(
          "artifact {}: this program resolves no '{}:' paths (edge-infer resolves 'demo:')", a->path, scheme));
    resolve = it->second;
  }
  auto path = resolve(name);
  if (!path) return path.status().with_context("artifact " + a->path);
  ASSIGN_OR_RETURN(std::string sha, sha256_file(*path));
  if (!a->sha256.empty() && a->sha256 != sha)
    return Status::invalid_argument(fmt::format("artifact {} ({}, sha256 {}) differs from the declared artifact hash {}",
                                                a->path, *path, sha, a->sha256));
  a->symbol = a->path;
  a->path = *path;
  a->sha256 = sha;
  return Status();
}

std::string artifact_path(const PipelineSpec& p, const Artifact& a) {
  const std::filesystem::path path(a.path);
  if (path.is_absolute() || p.base_dir.empty()) return a.path;
  return (std::filesystem::path(p.base_dir) / path).string();
}

Status verify_artifacts(const PipelineSpec& p, const StageSpec& s) {
  for (const Artifact& a : s.artifacts) {
    if (!a.pinned()) continue;  // only graphs built in code (serve -m) leave one unpinned
    const std::string path = artifact_path(p, a);
    auto got = sha256_file(path);
    if (!got) return got.status().with_context(fmt::format("stage '{}' {}", s.name, a.role));
    if (*got != a.sha256)
      return Status::invalid_argument(
          fmt::format("stage '{}': {} {} (sha256 {}) differs from the declared artifact hash {}",
                      s.name, a.role, path, *got, a.sha256));
  }
  return Status();
}

}  // namespace edge::pipeline
