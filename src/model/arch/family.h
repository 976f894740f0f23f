// A model family: how to read its hyper-parameters (GGUF metadata, HF config.json), which
// tensors it has (schema), and how HF tensor names map to canonical (GGUF) names. One
// file per family under arch/ defines one of these; registry.cpp lists them.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/status.h"
#include "formats/gguf.h"
#include "model/config.h"
#include "model/tensor_schema.h"

namespace edge {

struct ArchFamily {
  const char* name = "";                    // "llama"
  std::vector<std::string> gguf_archs;      // general.architecture values it reads
  std::vector<std::string> hf_model_types;  // config.json model_type values it reads
  // `arch` is the matched general.architecture (the key prefix).
  Expected<ModelConfig> (*from_gguf)(const GgufFile& f, const std::string& arch) = nullptr;
  // `cfg` is config.json (or its text_config for multimodal wrappers).
  Expected<ModelConfig> (*from_hf)(const nlohmann::json& cfg) = nullptr;
  TensorSchema (*schema)(const ModelConfig& c) = nullptr;
  // HF tensor name -> canonical name; "" for tensors the forward does not use.
  std::string (*hf_tensor_name)(const std::string& hf_name) = nullptr;
  // HF checkpoints store RMSNorm weights as w and compute x*(1+w) (Gemma); GGUF stores
  // w+1. The loader adds 1 to every norm weight of an HF checkpoint when set.
  bool hf_norms_plus_one = false;
};

const ArchFamily& llama_family();
const ArchFamily& qwen2_family();
const ArchFamily& qwen3_family();
const ArchFamily& gemma3_family();

}  // namespace edge
