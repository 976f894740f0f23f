// Hugging Face model directory: config.json (required), safetensors weights (single or
// sharded), and the optional tokenizer.json, tokenizer_config.json, generation_config.json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "formats/safetensors.h"

namespace edge {

// The Hugging Face folder a path names: the folder itself, or the folder of a file in it
// (".": a bare file name).
std::string hf_folder_of(const std::string& path);

// Reads and parses a JSON file. A parse error names the file, line and column.
Expected<nlohmann::json> read_json_file(const std::string& path);

struct HfModelDir {
  std::string dir;
  nlohmann::json config;          // config.json
  SafetensorsModel weights;
  std::string tokenizer_json_path;     // empty if absent
  std::string tokenizer_config_path;   // empty if absent
  std::string generation_config_path;  // empty if absent
  nlohmann::json tokenizer_config;     // null if absent

  static Expected<HfModelDir> open(const std::string& dir);
};

}  // namespace edge
