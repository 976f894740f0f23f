// What kind of model a path holds, decided in one place for every reader (Model::load, the
// footprint reader, the CLI's tokenizer loader): a GGUF file (by its magic "GGUF"), a
// Hugging Face directory (config.json + safetensors, tokenizer.json), or a llama2.c
// checkpoint (any other regular file: the llama2.c reader checks its header and names what
// is wrong with it).
#pragma once

#include <string>

#include "core/status.h"

namespace edge {

enum class ModelFormat { kGguf, kHfDir, kLlama2c };
const char* model_format_name(ModelFormat f);  // "gguf" | "hf" | "llama2c"

// not_found when nothing is at `path`, invalid_argument for something that is neither a
// directory nor a regular file, io_error when the file cannot be read.
Expected<ModelFormat> detect_model_format(const std::string& path);

}  // namespace edge
