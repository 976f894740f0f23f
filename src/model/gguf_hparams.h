// The llama.cpp GGUF hyper-parameter keys shared by every model we write (make-model and
// export): one place that spells them, so the files stay loadable by llama.cpp.
#pragma once

#include <string>

#include "model/config.h"

namespace edge {

class GgufWriter;

// general.architecture/name/alignment and <arch>.context_length, embedding_length,
// block_count, feed_forward_length, attention.{head_count, head_count_kv, key_length,
// value_length, layer_norm_rms_epsilon}, rope.{freq_base, dimension_count}, vocab_size;
// RoPE values come from `rope_layer` (the global layers' settings); for a MoE model the
// expert keys (expert_count, expert_used_count, expert_feed_forward_length, ...).
void write_common_gguf_hparams(const ModelConfig& c, const LayerConfig& rope_layer,
                               const std::string& name, GgufWriter& w);

}  // namespace edge
