// A loaded model written back out as a GGUF file, in the layout Model::load reads back to
// the same logits: llama metadata, GGUF tensor names, F32 norms, matrices in the type they
// were loaded as (F32/F16/BF16 bytes copied as is) and the tokenizer, if the model has one.
// Used to bring llama2.c checkpoints into the GGUF pipeline (e.g. quantize_gguf).
//
// Supported: the llama family as loaded from GGUF or llama2.c (interleaved RoPE, full
// attention, no biases or q/k norms). Anything else — another family, HF Llama (rotate-half
// RoPE rows would need permuting), sliding windows, packed weights — is `unsupported`.
#pragma once

#include <string>

#include "core/status.h"
#include "model/model.h"

namespace edge {

Status write_model_gguf(const Model& model, const std::string& path);

}  // namespace edge
