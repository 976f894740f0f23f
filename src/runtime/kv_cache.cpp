#include "runtime/kv_cache.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/check.h"
#include "core/memory_ledger.h"

namespace edge {

namespace {

// Blocks per group for the budget (see the header): sliding layers first, bounded by
// max_seqs windows; the rest of the bytes to global layers.
Expected<std::array<int64_t, 2>> split_budget(const KvLayout& l, const KvCacheOptions& o) {
  const std::array<int64_t, 2> per_seq = {l.blocks_per_seq(kKvGlobal, o.max_model_len, o.max_step),
                                          l.blocks_per_seq(kKvSliding, o.max_model_len, o.max_step)};
  const uint64_t one_seq = static_cast<uint64_t>(per_seq[0] * l.block_bytes[0] + per_seq[1] * l.block_bytes[1]);
  if (o.budget_bytes == 0) return std::array<int64_t, 2>{per_seq[0] * o.max_seqs, per_seq[1] * o.max_seqs};
  if (o.budget_bytes < one_seq)
    return Status::resource_exhausted(fmt::format(
        "KV budget of {} bytes cannot hold one sequence of {} positions: that needs {} bytes ({} {} "
        "blocks of {} bytes{})",
        o.budget_bytes, o.max_model_len, one_seq, per_seq[0], l.has_group(kKvSliding) ? "global" : "",
        l.block_bytes[0],
        l.has_group(kKvSliding) ? fmt::format(" + {} sliding blocks of {} bytes", per_seq[1], l.block_bytes[1]) : ""));
  std::array<int64_t, 2> n{0, 0};
  if (l.has_group(kKvSliding)) {
    const uint64_t rest_for_global = static_cast<uint64_t>(per_seq[0] * l.block_bytes[0]);
    const int64_t fit = static_cast<int64_t>((o.budget_bytes - rest_for_global) / static_cast<uint64_t>(l.block_bytes[1]));
    n[1] = l.has_group(kKvGlobal) ? std::min<int64_t>(per_seq[1] * o.max_seqs, fit) : fit;
  }
  if (l.has_group(kKvGlobal))
    n[0] = static_cast<int64_t>((o.budget_bytes - static_cast<uint64_t>(n[1] * l.block_bytes[1])) /
                                static_cast<uint64_t>(l.block_bytes[0]));
  return n;
}

}  // namespace

Expected<uint64_t> parse_kv_budget(const std::string& s, bool* is_tokens) {
  *is_tokens = false;
  if (s.size() > 3 && s.compare(s.size() - 3, 3, "tok") == 0) {
    *is_tokens = true;
    ASSIGN_OR_RETURN(int64_t n, parse_byte_size(s.substr(0, s.size() - 3)));
    return static_cast<uint64_t>(n);
  }
  ASSIGN_OR_RETURN(int64_t n, parse_byte_size(s));
  if (n <= 0) return Status::invalid_argument("KV budget '" + s + "' must be positive");
  return static_cast<uint64_t>(n);
}

KvCache::KvCache(KvCacheOptions o, KvStorage storage, bool prefix, StateCheckpoints checkpoints)
    : options_(std::move(o)),
      storage_(std::move(storage)),
      pools_{BlockPool(static_cast<int32_t>(storage_.n_blocks(0))), BlockPool(static_cast<int32_t>(storage_.n_blocks(1)))},
      prefix_(prefix),
      checkpoints_(std::move(checkpoints)) {
  for (int64_t i = storage_.n_state_slots() - 1; i >= 0; --i) free_slots_.push_back(static_cast<int32_t>(i));
}

Expected<KvCache> KvCache::create(const ModelConfig& config, const KvCacheOptions& o) {
  if (o.max_model_len <= 0 || o.max_seqs <= 0 || o.max_step <= 0)
    return Status::invalid_argument("KV cache: context, sequences and step size must be positive");
  const KvLayout layout = KvLayout::make(config, o.settings);
  ASSIGN_OR_RETURN(auto n_blocks, split_budget(layout, o));
  if (n_blocks[0] > INT32_MAX || n_blocks[1] > INT32_MAX)
    return Status::invalid_argument("KV cache: too many blocks");
  ASSIGN_OR_RETURN(KvStorage storage, KvStorage::create(layout, n_blocks, o.max_seqs));
  if (o.state_checkpoints < 0)
    return Status::invalid_argument("KV cache: state checkpoints must not be negative");
  // A model with recurrent layers caches prefixes only through state checkpoints.
  const bool prefix = o.prefix_cache && (!layout.has_state() || o.state_checkpoints > 0);
  StateCheckpoints checkpoints;
  if (prefix && layout.has_state()) {
    ASSIGN_OR_RETURN(checkpoints, StateCheckpoints::create(o.state_checkpoints, layout.state_bytes_per_seq()));
  }
  return KvCache(o, std::move(storage), prefix, std::move(checkpoints));
}

uint8_t* KvCache::slot_state(int32_t slot) {
  // The slot's bytes start with its first recurrent layer's state (kv_layout.h).
  for (size_t l = 0; l < layout().layer_group.size(); ++l)
    if (layout().layer_group[l] < 0 && layout().layer_slot[l] == 0)
      return reinterpret_cast<uint8_t*>(storage_.state(static_cast<int>(l), slot));
  CHECK(false && "a state slot without recurrent layers");
  return nullptr;
}

int64_t KvCache::clip_to_checkpoint(int64_t n_computed, int64_t n, int64_t n_prompt) const {
  if (checkpoints_.capacity() == 0 || n_prompt <= 0) return n;
  const int64_t bt = layout().settings.block_tokens, boundary = (n_prompt - 1) / bt * bt;
  return n_computed < boundary && n_computed + n > boundary ? boundary - n_computed : n;
}

std::array<int64_t, 2> KvCache::blocks_per_full_seq() const {
  return {layout().blocks_per_seq(kKvGlobal, options_.max_model_len, options_.max_step),
          layout().blocks_per_seq(kKvSliding, options_.max_model_len, options_.max_step)};
}

int64_t KvCache::first_window_block(int64_t pos) const {
  return std::max<int64_t>(0, pos - layout().window + 1) / layout().settings.block_tokens;
}

KvCache::CachedRun KvCache::find_cached(std::span<const int32_t> prompt, int64_t max_blocks) const {
  const int64_t bt = layout().settings.block_tokens;
  CachedRun run;
  uint64_t parent = 0;
  for (int64_t b = 0; b < max_blocks; ++b) {
    const auto toks = prompt.subspan(static_cast<size_t>(b * bt), static_cast<size_t>(bt));
    const uint64_t h = chain_block_hash(parent, toks);
    std::array<int32_t, 2> phys{-1, -1};
    for (int g = 0; g < 2; ++g)
      if (layout().has_group(g)) phys[g] = pools_[g].find(h, parent, toks);
    // Every global block of the prefix is needed; sliding ones only near its end.
    if (layout().has_group(kKvGlobal) && phys[kKvGlobal] < 0) break;
    for (int g = 0; g < 2; ++g) run.found[g].push_back(phys[g]);
    run.hash.push_back(h);
    parent = h;
  }
  return run;
}

bool KvCache::window_cached(const std::vector<int32_t>& found, int64_t n) const {
  if (!layout().has_group(kKvSliding)) return true;
  for (int64_t b = first_window_block(n * layout().settings.block_tokens); b < n; ++b)
    if (found[static_cast<size_t>(b)] < 0) return false;
  return true;
}

int64_t KvCache::longest_window_hit(const std::vector<int32_t>& found) const {
  const int64_t bt = layout().settings.block_tokens;
  // cached_run[i]: how many blocks up to and including i are cached without a gap.
  std::vector<int64_t> cached_run(found.size());
  for (size_t i = 0; i < found.size(); ++i)
    cached_run[i] = found[i] < 0 ? 0 : (i > 0 ? cached_run[i - 1] : 0) + 1;
  for (int64_t n = static_cast<int64_t>(found.size()); n > 0; --n)
    if (cached_run[static_cast<size_t>(n - 1)] >= n - first_window_block(n * bt)) return n;
  return 0;
}

int64_t KvCache::attach_prefix(SeqKv& s, std::span<const int32_t> prompt) {
  if (!prefix_ || !s.blocks[0].empty() || !s.blocks[1].empty() || prompt.empty()) return 0;
  const int64_t bt = layout().settings.block_tokens;
  const CachedRun run = find_cached(prompt, (static_cast<int64_t>(prompt.size()) - 1) / bt);
  const int64_t found = static_cast<int64_t>(run.hash.size());
  int64_t n = found;
  if (layout().has_group(kKvSliding)) {
    n = longest_window_hit(run.found[kKvSliding]);
    // Without a global group nothing says how far the prompt was cached: no miss to report.
    if (layout().has_group(kKvGlobal)) s.window_miss = (found - n) * bt;
  }
  if (layout().has_state()) {
    // The recurrent layers resume only from a checkpoint: the longest such boundary.
    int32_t ck = -1;
    for (; n > 0; --n)
      if (window_cached(run.found[kKvSliding], n) &&
          (ck = checkpoints_.find(run.hash[static_cast<size_t>(n - 1)], n * bt)) >= 0)
        break;
    s.restore_checkpoint = n > 0 ? ck : -1;
  }
  const int64_t first = first_window_block(n * bt);
  for (int g = 0; g < 2; ++g) {
    if (!layout().has_group(g)) continue;
    for (int64_t b = 0; b < n; ++b) {
      const int32_t phys = g == kKvSliding && b < first ? -1 : run.found[g][static_cast<size_t>(b)];
      if (phys >= 0) pools_[g].take(phys);
      s.blocks[g].push_back(phys);
    }
  }
  s.n_hashed = n;
  s.last_hash = n > 0 ? run.hash[static_cast<size_t>(n - 1)] : 0;
  s.n_pos = n * bt;
  return s.n_pos;
}

std::array<int64_t, 2> KvCache::blocks_needed(const SeqKv& s, int64_t n_pos) const {
  const int64_t bt = layout().settings.block_tokens;
  const int64_t logical = (n_pos + bt - 1) / bt;
  std::array<int64_t, 2> need{0, 0};
  for (int g = 0; g < 2; ++g)
    if (layout().has_group(g)) need[g] = std::max<int64_t>(0, logical - static_cast<int64_t>(s.blocks[g].size()));
  return need;
}

bool KvCache::reserve(SeqKv& s, int64_t n_pos) {
  const auto need = blocks_needed(s, n_pos);
  for (int g = 0; g < 2; ++g)
    if (need[g] > pools_[g].n_free()) return false;
  if (layout().has_state() && s.state_slot < 0) {
    if (free_slots_.empty()) return false;
    s.state_slot = free_slots_.back();
    free_slots_.pop_back();
    if (s.restore_checkpoint >= 0) {  // the attached prefix's state (attach_prefix)
      checkpoints_.restore(s.restore_checkpoint, slot_state(s.state_slot));
      s.restore_checkpoint = -1;
      ++checkpoint_restores_;
    }
  }
  for (int g = 0; g < 2; ++g)
    for (int64_t i = 0; i < need[g]; ++i) {
      const int32_t b = pools_[g].allocate();
      CHECK(b >= 0);
      s.blocks[g].push_back(b);
    }
  s.n_pos = std::max(s.n_pos, n_pos);
  return true;
}

void KvCache::commit(SeqKv& s, std::span<const int32_t> tokens, int64_t n_computed, int64_t n_prompt) {
  const int64_t bt = layout().settings.block_tokens;
  if (prefix_) {
    const int64_t full = std::min<int64_t>(n_computed, static_cast<int64_t>(tokens.size())) / bt;
    const int64_t logical = static_cast<int64_t>(std::max(s.blocks[0].size(), s.blocks[1].size()));
    for (int64_t b = s.n_hashed; b < full && b < logical; ++b) {
      const auto toks = tokens.subspan(static_cast<size_t>(b * bt), static_cast<size_t>(bt));
      const uint64_t h = chain_block_hash(s.last_hash, toks);
      // Registered before the ring below returns it: a freed sliding block stays findable.
      for (int g = 0; g < 2; ++g)
        if (b < static_cast<int64_t>(s.blocks[g].size()) && s.blocks[g][static_cast<size_t>(b)] >= 0)
          pools_[g].set_prefix(s.blocks[g][static_cast<size_t>(b)], h, s.last_hash, toks);
      s.last_hash = h;
      s.n_hashed = b + 1;
    }
    // The slot holds the state after exactly n_computed positions: on a block boundary
    // that is a checkpoint (the prompt's last boundary shared, any other the rolling one).
    if (checkpoints_.capacity() > 0 && s.state_slot >= 0 && n_computed > 0 &&
        n_computed % bt == 0 && s.n_hashed * bt == n_computed) {
      const bool prompt_boundary = n_prompt > 0 && n_computed == (n_prompt - 1) / bt * bt;
      if (!prompt_boundary && s.checkpoint_owner == 0) s.checkpoint_owner = next_owner_++;
      checkpoints_.save(s.last_hash, n_computed, slot_state(s.state_slot),
                        prompt_boundary ? 0 : s.checkpoint_owner);
      ++checkpoint_saves_;
    }
  }
  if (layout().has_group(kKvSliding)) {
    // The next query (position n_computed) sees no block before first_window_block.
    const int64_t first = first_window_block(n_computed);
    for (int64_t b = 0; b < first && b < static_cast<int64_t>(s.blocks[1].size()); ++b) {
      int32_t& phys = s.blocks[1][static_cast<size_t>(b)];
      if (phys >= 0) pools_[1].unref(phys), phys = -1;
    }
  }
}

void KvCache::release(SeqKv& s) {
  for (int g = 0; g < 2; ++g) {
    for (int32_t b : s.blocks[g])
      if (b >= 0) pools_[g].unref(b);
    s.blocks[g].clear();
  }
  if (s.state_slot >= 0) free_slots_.push_back(s.state_slot);
  s = SeqKv{};
}

}  // namespace edge
