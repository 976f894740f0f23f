// ModelConfig of a llama2.c checkpoint (a Llama with interleaved RoPE, eps 1e-5).
#pragma once

#include "formats/llama2c.h"
#include "model/config.h"

namespace edge {

ModelConfig llama_config_from_llama2c(const Llama2cFile::Header& h);

}  // namespace edge
