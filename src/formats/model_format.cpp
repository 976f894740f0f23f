// detect_model_format: a directory is a Hugging Face model, a file starting with "GGUF" a
// GGUF one, any other file a llama2.c checkpoint (the only headerless format we read).
#include "formats/model_format.h"

#include <cstring>
#include <filesystem>
#include <fstream>

namespace edge {

const char* model_format_name(ModelFormat f) {
  switch (f) {
    case ModelFormat::kGguf:
      return "gguf";
    case ModelFormat::kHfDir:
      return "hf";
    case ModelFormat::kLlama2c:
      return "llama2c";
  }
  return "?";
}

Expected<ModelFormat> detect_model_format(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found)
    return Status::not_found(path + ": no such file or directory");
  if (ec) return Status::io_error(path + ": " + ec.message());
  if (fs::is_directory(st)) return ModelFormat::kHfDir;
  if (!fs::is_regular_file(st))
    return Status::invalid_argument(path +
                                    ": neither a file nor a directory (a model is a GGUF file, a "
                                    "Hugging Face directory or a llama2.c checkpoint)");
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::io_error(path + ": cannot open");
  char magic[4] = {};
  if (f.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0) return ModelFormat::kGguf;
  return ModelFormat::kLlama2c;
}

}  // namespace edge
