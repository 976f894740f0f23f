#include "model/gguf_hparams.h"

#include "formats/gguf.h"

namespace edge {

void write_common_gguf_hparams(const ModelConfig& c, const LayerConfig& rope_layer,
                               const std::string& name, GgufWriter& w) {
  const std::string& a = c.arch;
  w.set_string("general.architecture", a);
  w.set_string("general.name", name);
  w.set_u32("general.alignment", 32);
  w.set_u32(a + ".context_length", static_cast<uint32_t>(c.max_ctx));
  w.set_u32(a + ".embedding_length", c.n_embd);
  w.set_u32(a + ".block_count", c.n_layer);
  w.set_u32(a + ".feed_forward_length", c.n_ff);
  w.set_u32(a + ".attention.head_count", c.n_head);
  w.set_u32(a + ".attention.head_count_kv", c.n_head_kv);
  w.set_u32(a + ".attention.key_length", c.head_dim);
  w.set_u32(a + ".attention.value_length", c.head_dim);
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", c.norm_eps);
  w.set_f32(a + ".rope.freq_base", rope_layer.rope_theta);
  w.set_u32(a + ".rope.dimension_count", rope_layer.rotary_dim);
  w.set_u32(a + ".vocab_size", c.n_vocab);
  if (c.pooling_type >= 0) w.set_u32(a + ".pooling_type", static_cast<uint32_t>(c.pooling_type));
  if (c.moe.enabled()) {
    w.set_u32(a + ".expert_count", c.moe.n_expert);
    w.set_u32(a + ".expert_used_count", c.moe.n_expert_used);
    w.set_u32(a + ".expert_feed_forward_length", c.moe.n_ff_expert);
    if (c.moe.n_ff_shared > 0) w.set_u32(a + ".expert_shared_feed_forward_length", c.moe.n_ff_shared);
    w.set_bool(a + ".expert_weights_norm", c.moe.norm_topk);
    if (c.moe.weights_scale != 1.0f) w.set_f32(a + ".expert_weights_scale", c.moe.weights_scale);
  }
}

}  // namespace edge
