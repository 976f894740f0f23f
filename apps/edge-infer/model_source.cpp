#include "model_source.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "formats/gguf.h"

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
