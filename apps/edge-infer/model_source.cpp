#include "model_source.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "formats/gguf.h"
#include "model/random_model.h"

namespace edge::cli {
namespace fs = std::filesystem;

Expected<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    fs::path dir(path);
    if (!fs::exists(dir / "tokenizer.json"))
      return Status::not_found(path + ": no tokenizer.json in this directory");
    std::string cfg = fs::exists(dir / "tokenizer_config.json") ? (dir / "tokenizer_config.json").string() : "";
    auto tok = Tokenizer::from_tokenizer_json((dir / "tokenizer.json").string(), cfg);
    if (!tok) return tok.status();
    return std::make_unique<Tokenizer>(std::move(*tok));
  }
  if (path.size() >= 5 && path.substr(path.size() - 5) == ".json") {
    auto tok = Tokenizer::from_tokenizer_json(path, "");
    if (!tok) return tok.status();
    return std::make_unique<Tokenizer>(std::move(*tok));
  }
  auto gguf = GgufFile::open(path);
  if (!gguf) return gguf.status();
  auto tok = Tokenizer::from_gguf(*gguf);
  if (!tok) return tok.status().with_context(path);
  return std::make_unique<Tokenizer>(std::move(*tok));
}

}  // namespace edge::cli

namespace edge::cli {

Expected<std::string> demo_model_path() {
  // Written once per version of the demo's shape; the file name carries the version.
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  fs::path dir = cache ? fs::path(cache) : home ? fs::path(home) / ".cache" : fs::temp_directory_path();
  dir /= "edge-infer";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::io_error(dir.string() + ": " + ec.message());
  fs::path path = dir / "demo-llama-v1.gguf";
  std::fprintf(stderr,
               "edge-infer: no model given (-m): using the built-in demo model %s. Its weights are random, "
               "so its text is noise.\n",
               path.c_str());
  if (fs::exists(path)) return path.string();
  RandomModelOptions o;
  o.arch = "llama";
  o.n_layer = 4;
  o.n_embd = 256;
  o.n_head = 8;
  o.n_head_kv = 4;
  o.n_ff = 768;
  o.n_vocab = 2048;
  o.ctx = 2048;
  o.dtype = DType::F16;
  o.seed = 2026;
  RETURN_IF_ERROR(write_random_model(o, path.string()));
  return path.string();
}

}  // namespace edge::cli
