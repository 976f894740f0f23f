// A model family: how to read its hyper-parameters (GGUF metadata, HF config.json), which
// tensors it has (schema), and how HF tensor names map to canonical (GGUF) names. One
// file per family under arch/ defines one of these; registry.cpp lists them.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "formats/gguf.h"
#include "model/config.h"
#include "model/packed_weights.h"
#include "model/tensor_schema.h"

namespace edge {

class GgufWriter;

// One model of a family as its files name it (ModelConfig::arch of what the readers
// return) and what a writer puts in a new file of it: `make-model` takes the defaults here,
// so a made-up model has the family's shape without a check of the name.
struct ArchVariant {
  std::string arch;             // ModelConfig::arch, GGUF general.architecture: "spark"
  std::string hf_class;         // config.json architectures[0]: "SparkForCausalLM"
  std::string hf_model_type;    // config.json model_type a writer puts: "spark"
  float norm_eps = 1e-5f;       // RMSNorm epsilon of a made-up model
  float rope_theta = 10000.0f;  // RoPE theta of its global (or only) layers
  int32_t rotary_divisor = 1;   // its global layers rotate head_dim / this, even (Spark: 4)
  // Period P of the sliding/global pattern, layer i global iff (i + 1) % P == 0 (Gemma-3:
  // 6, Spark: 4); 0: the variant has no sliding layers of its own.
  int32_t sliding_period = 0;
  // RoPE theta of the sliding layers (Gemma-3: 10000); 0: the global layers' (GPT-OSS).
  float sliding_rope_theta = 10000.0f;
  // YaRN factor and original context of a made-up model (GPT-OSS: 32, 4096); 0: none.
  float yarn_factor = 0.0f;
  float yarn_original_ctx = 4096.0f;
  int32_t sliding_window = 512;  // window of a made-up model's sliding layers
};

// One tensor of a Hugging Face checkpoint a writer makes, as floats (row-major shape).
struct HfTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};
// A canonical tensor's values in GGUF conventions (writers).
using HfValuesOf = std::function<std::vector<float>(const std::string& canonical)>;

struct ArchFamily {
  const char* name = "";                    // "llama"
  std::vector<std::string> gguf_archs;      // general.architecture values it reads
  std::vector<std::string> hf_model_types;  // config.json model_type values it reads
  // The models a writer can make, the family's own name first.
  std::vector<ArchVariant> variants;
  // `arch` is the matched general.architecture (the key prefix).
  Expected<ModelConfig> (*from_gguf)(const GgufFile& f, const std::string& arch) = nullptr;
  // `cfg` is config.json (or its text_config for multimodal wrappers).
  Expected<ModelConfig> (*from_hf)(const nlohmann::json& cfg) = nullptr;
  TensorSchema (*schema)(const ModelConfig& c) = nullptr;
  // HF tensor name -> canonical name; "" for tensors the forward does not use.
  std::string (*hf_tensor_name)(const std::string& hf_name) = nullptr;
  // Canonical tensors an HF checkpoint holds in another form than one tensor each (GPT-OSS's
  // experts: gate and up rows interleaved in one tensor, MXFP4 blocks and scales apart, float
  // experts stored [in, out]): built into `out` (owned buffers) from the checkpoint's tensors
  // `hf`, which hf_tensor_name maps to "". May be null.
  Status (*hf_derive)(const ModelConfig& c, const TensorSet& hf, int threads,
                      PreparedTensors* out) = nullptr;
  // Whether hf_derive consumes the checkpoint tensor `hf` (the memory plan counts it).
  bool (*hf_derives)(const std::string& hf) = nullptr;
  // Its HF experts are GPT-OSS's fused form (writers): mlp.experts.gate_up_proj [E, n_embd,
  // 2 n_ff] with gate and up columns interleaved, down_proj [E, n_ff, n_embd], their biases
  // gate_up_proj_bias [E, 2 n_ff] and down_proj_bias [E, n_embd]; MXFP4 experts as
  // *_blocks / *_scales stored [E, rows, ...] (gate_up rows interleaved).
  bool hf_fused_experts = false;
  // Writers: the HF tensors of canonical tensor `canonical` ([shape], `values` in GGUF
  // conventions) when the family stores it otherwise than renamed (Qwen3.5: A_log, conv1d
  // [C, 1, K], value heads grouped, fused experts); false for the generic renaming. May be null.
  bool (*hf_write_tensor)(const ModelConfig& c, const std::string& canonical,
                          const std::vector<int64_t>& shape, std::vector<float> values,
                          const HfValuesOf& values_of, std::vector<HfTensor>* out) = nullptr;
  // HF checkpoints store RMSNorm weights as w and compute x*(1+w) (Gemma, Qwen3.5); GGUF
  // stores w+1. The loader adds 1 to every norm weight of an HF checkpoint when set, except
  // a gated norm's (hf_norm_takes_one).
  bool hf_norms_plus_one = false;
  // The family's fixed facts its GGUF reader sets beyond the traits below (GPT-OSS: sinks,
  // output bias, the FFN norm's name), for a made-up model. May be null.
  void (*made_up)(ModelConfig* c) = nullptr;
  // GGUF keys of the family beyond write_common_gguf_hparams' (writers). May be null.
  void (*gguf_extras)(const ModelConfig& c, GgufWriter* w) = nullptr;
  // Canonical name -> HF tensor name (the inverse of hf_tensor_name, for writers).
  std::string (*hf_name_of)(const std::string& canonical) = nullptr;
  // The config.json fields of the family beyond hf_common_hparams' (the inverse of
  // from_hf's extra reads; writers add them to the common ones). May be null.
  void (*hf_config_extras)(const ModelConfig& c, nlohmann::json* j) = nullptr;

  // What every model of the family has, as its GGUF reader sets it (a made-up model copies
  // these): GGUF q/k rows in interleaved-pair RoPE order (Llama; HF rows rotate halves, so
  // converters reorder them), the activation, q/k/v biases (Qwen2), per-head q/k norms
  // (Qwen3, Gemma), post-attention/FFN norms and embeddings scaled by sqrt(n_embd) (Gemma),
  // and whether the output head shares the embedding unless a file says otherwise.
  RopeStyle gguf_rope_style = RopeStyle::kNeox;
  Activation act = Activation::kSwiGlu;
  bool qkv_bias = false, qk_norm = false, post_norms = false, scale_embeddings = false;
  bool tied_by_default = false;
  // Its GGUF reader takes the <arch>.edge.* keys (gemma3.cpp): sliding/global layer
  // pattern with per-type RoPE, and the attention scale 1/sqrt(query_pre_attn_scalar),
  // which a made-up model sets to 1/sqrt(head_dim). Without them a GGUF file of the family
  // cannot express sliding layers.
  bool gguf_sliding_pattern = false;
  // Its GGUF reader takes Llama-3.1 RoPE scaling as the rope_freqs.weight tensor.
  bool gguf_rope_freqs = false;
  // A mixture-of-experts family (moe.n_expert > 0): its routing and bias traits, and the
  // expert counts a made-up model takes when the writer is not told (RandomModelOptions).
  MoeConfig moe;

  const ArchVariant* variant(const std::string& arch) const;
};

const ArchFamily& llama_family();
const ArchFamily& qwen2_family();
const ArchFamily& qwen3_family();
const ArchFamily& gemma3_family();
const ArchFamily& qwen3moe_family();
const ArchFamily& gpt_oss_family();
const ArchFamily& qwen35_family();
const ArchFamily& qwen35moe_family();
const ArchFamily& qwen3next_family();

}  // namespace edge
