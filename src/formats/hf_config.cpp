#include "formats/hf_config.h"

#include <filesystem>

#include "core/mapped_file.h"

namespace edge {

namespace {

namespace fs = std::filesystem;

std::string existing(const std::string& dir, const char* name) {
  std::error_code ec;
  const fs::path p = fs::path(dir) / name;
  return fs::is_regular_file(p, ec) ? p.string() : std::string();
}

}  // namespace

std::string hf_folder_of(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return path;
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

Expected<nlohmann::json> read_json_file(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.status();
  try {
    return nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception& e) {
    // nlohmann's parse_error text already names the line and column.
    return Status::invalid_format(path + ": bad JSON: " + e.what());
  }
}

Expected<HfModelDir> HfModelDir::open(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Status::not_found(dir + ": not a directory");
  const std::string config_path = existing(dir, "config.json");
  if (config_path.empty())
    return Status::not_found(dir + ": not a Hugging Face model directory: no config.json");
  HfModelDir m;
  m.dir = dir;
  ASSIGN_OR_RETURN(m.config, read_json_file(config_path));
  if (!m.config.is_object())
    return Status::invalid_format(config_path + ": expected a JSON object");
  auto weights = SafetensorsModel::open(dir);
  if (!weights) return weights.status().with_context("loading weights of " + dir);
  m.weights = std::move(weights).value();
  m.tokenizer_json_path = existing(dir, "tokenizer.json");
  m.tokenizer_config_path = existing(dir, "tokenizer_config.json");
  m.generation_config_path = existing(dir, "generation_config.json");
  if (!m.tokenizer_config_path.empty()) {
    ASSIGN_OR_RETURN(m.tokenizer_config, read_json_file(m.tokenizer_config_path));
  }
  return m;
}

}  // namespace edge
