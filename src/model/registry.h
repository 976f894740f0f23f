// The model families this build knows, looked up by GGUF general.architecture or by HF
// config.json model_type. An unknown name is refused by the loader naming it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/arch/family.h"

namespace edge {

const std::vector<const ArchFamily*>& all_families();
const ArchFamily* find_family_gguf(std::string_view arch);
const ArchFamily* find_family_hf(std::string_view model_type);
// "llama, qwen2, qwen3, gemma3, spark, ..." for error messages.
std::string known_architectures();
// "llama, qwen2, qwen3, gemma3, spark": every family's variants, the models a writer
// (make-model) can make.
std::string writable_architectures();

}  // namespace edge
