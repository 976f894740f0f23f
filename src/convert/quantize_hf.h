// Hugging Face directory (config.json, *.safetensors single or sharded, tokenizer.json) ->
// pre-packed GGUF, streamed like quantize_gguf (quant/quantize_file.h) so the transient is
// a few MB. The file loads with Model::load to the logits of the directory, within the
// quantisation error (exactly the same weights with QuantType::kF16 and F16/F32 sources):
//   * metadata: the llama.cpp hyper-parameter keys (gguf_hparams.h) plus what the family's
//     GGUF reader needs beyond them (linear RoPE scaling, Gemma's sliding-window pattern,
//     attention scale, activation), and the tokenizer as tokenizer.ggml.* (vocab_io.h);
//   * tensor names: the family's hf_tensor_name (HF tensors it does not use are skipped);
//   * Llama q/k: HF keeps rotate-half (NeoX) rows, GGUF "llama" rotates interleaved pairs,
//     so each head's rows are reordered: GGUF row 2i + s = HF row s * head_dim / 2 + i;
//   * Gemma norms: HF stores w, GGUF 1 + w (written as F32 w + 1);
//   * Llama-3.1 RoPE scaling becomes the rope_freqs.weight tensor, as llama.cpp writes it.
// Refused (unsupported, nothing written): families or configs the GGUF readers cannot
// express (Llama with a sliding window or partial rotary, irregular layer patterns).
#pragma once

#include <string>

#include "core/status.h"
#include "quant/quantize_file.h"

namespace edge {

Status quantize_hf_dir(const std::string& dir, const std::string& out, const QuantizeOptions& o,
                       QuantizeProgress progress = nullptr);

}  // namespace edge
