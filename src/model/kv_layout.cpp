#include "model/kv_layout.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/check.h"

namespace edge {

KvLayout KvLayout::make(const ModelConfig& c, const KvSettings& s) {
  KvLayout l;
  l.settings = s;
  l.k_row_bytes = kv_row_bytes(s.types.k, c.n_head_kv, c.head_dim);
  l.v_row_bytes = kv_row_bytes(s.types.v, c.n_head_kv, c.head_dim);
  for (const LayerConfig& lc : c.layers) {
    if (lc.recurrent) {
      l.layer_group.push_back(-1);
      l.layer_slot.push_back(l.n_state_layers++);
      continue;
    }
    const int g = lc.sliding && lc.window > 0 ? kKvSliding : kKvGlobal;
    l.layer_group.push_back(static_cast<int8_t>(g));
    l.layer_slot.push_back(l.n_slots[g]++);
    if (g == kKvSliding) l.window = std::max(l.window, lc.window);
  }
  for (int g = 0; g < 2; ++g)
    l.block_bytes[g] = int64_t{l.n_slots[g]} * s.block_tokens * (l.k_row_bytes + l.v_row_bytes);
  if (l.n_state_layers > 0)
    l.state_floats_per_layer =
        delta_net_conv_state_floats(c.linear) + delta_net_recurrent_state_floats(c.linear);
  return l;
}

int64_t KvLayout::blocks_per_seq(int group, int64_t n_pos, int64_t max_step) const {
  if (!has_group(group)) return 0;
  const int64_t bt = settings.block_tokens;
  const int64_t all = (n_pos + bt - 1) / bt;
  if (group == kKvGlobal) return all;
  const int64_t ring = (window + std::max<int64_t>(max_step, 1) - 1 + bt - 1) / bt + 1;
  return std::min(all, ring);
}

uint64_t KvLayout::bytes_for(int64_t n_seqs, int64_t n_pos, int64_t max_step) const {
  uint64_t total = 0;
  for (int g = 0; g < 2; ++g)
    total += static_cast<uint64_t>(n_seqs * blocks_per_seq(g, n_pos, max_step)) *
             static_cast<uint64_t>(block_bytes[g]);
  return total;
}

Expected<KvStorage> KvStorage::create(const KvLayout& layout, std::array<int64_t, 2> n_blocks,
                                     int64_t n_state_slots) {
  KvStorage s;
  s.layout_ = layout;
  s.n_blocks_ = n_blocks;
  s.n_state_slots_ = layout.has_state() ? n_state_slots : 0;
  if (s.n_state_slots_ > 0) {
    const uint64_t bytes = static_cast<uint64_t>(s.n_state_slots_) *
                           static_cast<uint64_t>(layout.state_bytes_per_seq());
    if (!s.state_buffer_.allocate(MemCategory::kState, bytes, TaggedBuffer::Kind::kAnonMmap, 4096))
      return Status::resource_exhausted(fmt::format(
          "recurrent state: cannot map {} bytes for {} sequences of {} bytes", bytes,
          s.n_state_slots_, layout.state_bytes_per_seq()));
  }
  for (int g = 0; g < 2; ++g) {
    const uint64_t bytes = static_cast<uint64_t>(n_blocks[g]) * static_cast<uint64_t>(layout.block_bytes[g]);
    if (bytes == 0) continue;
    if (!s.buffers_[g].allocate(MemCategory::kKv, bytes, TaggedBuffer::Kind::kAnonMmap, 4096))
      return Status::resource_exhausted(
          fmt::format("KV cache: cannot map {} bytes for {} blocks of {} bytes ({} layers)", bytes,
                      n_blocks[g], layout.block_bytes[g], g == kKvGlobal ? "global" : "sliding"));
  }
  return s;
}

float* KvStorage::state(int layer, int64_t slot) {
  CHECK(layout_.layer_group[static_cast<size_t>(layer)] < 0 && slot >= 0 && slot < n_state_slots_);
  const int64_t per_seq = int64_t{layout_.n_state_layers} * layout_.state_floats_per_layer;
  return reinterpret_cast<float*>(state_buffer_.data()) + slot * per_seq +
         int64_t{layout_.layer_slot[static_cast<size_t>(layer)]} * layout_.state_floats_per_layer;
}

void KvStorage::clear_state(int64_t slot) {
  CHECK(slot >= 0 && slot < n_state_slots_);
  const int64_t per_seq = int64_t{layout_.n_state_layers} * layout_.state_floats_per_layer;
  float* p = reinterpret_cast<float*>(state_buffer_.data()) + slot * per_seq;
  std::fill(p, p + per_seq, 0.0f);
}

uint8_t* KvStorage::block_base(int layer, int64_t b, int kv) {
  const int g = layout_.layer_group[static_cast<size_t>(layer)];
  CHECK(g >= 0 && b >= 0 && b < n_blocks_[g]);
  const int64_t bt = layout_.settings.block_tokens;
  const int64_t slot = layout_.layer_slot[static_cast<size_t>(layer)];
  const int64_t off = b * layout_.block_bytes[g] +
                      slot * bt * (layout_.k_row_bytes + layout_.v_row_bytes) +
                      (kv != 0 ? bt * layout_.k_row_bytes : 0);
  return buffers_[g].data() + off;
}

}  // namespace edge
