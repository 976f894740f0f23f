#include "runtime/state_checkpoints.h"

#include <fmt/format.h>

#include <cstring>

#include "core/check.h"

namespace edge {

Expected<StateCheckpoints> StateCheckpoints::create(int64_t count, int64_t bytes_each) {
  StateCheckpoints c;
  if (count <= 0 || bytes_each <= 0) return c;
  if (!c.buffer_.allocate(MemCategory::kState, static_cast<size_t>(count * bytes_each),
                          TaggedBuffer::Kind::kAnonMmap, 4096))
    return Status::resource_exhausted(
        fmt::format("state checkpoints: cannot map {} bytes for {} of {} bytes", count * bytes_each,
                    count, bytes_each));
  c.entries_.resize(static_cast<size_t>(count));
  c.bytes_each_ = bytes_each;
  return c;
}

int64_t StateCheckpoints::n_saved() const {
  int64_t n = 0;
  for (const Entry& e : entries_) n += e.n_pos >= 0 ? 1 : 0;
  return n;
}

int32_t StateCheckpoints::find(uint64_t hash, int64_t n_pos) const {
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].n_pos == n_pos && entries_[i].hash == hash) return static_cast<int32_t>(i);
  return -1;
}

int32_t StateCheckpoints::least_recently_used() const {
  int32_t best = 0;
  for (size_t i = 1; i < entries_.size(); ++i)
    if (entries_[i].used < entries_[static_cast<size_t>(best)].used) best = static_cast<int32_t>(i);
  return best;
}

int32_t StateCheckpoints::save(uint64_t hash, int64_t n_pos, const uint8_t* state, uint64_t owner) {
  CHECK(!entries_.empty() && n_pos > 0);
  int32_t i = find(hash, n_pos);  // the same prefix's state: the bytes are the same
  if (i < 0 && owner > 0) {
    for (size_t j = 0; j < entries_.size(); ++j)
      if (entries_[j].owner == owner) i = static_cast<int32_t>(j);
  }
  const bool fresh = i < 0 || entries_[static_cast<size_t>(i)].hash != hash ||
                     entries_[static_cast<size_t>(i)].n_pos != n_pos;
  if (i < 0) i = least_recently_used();
  Entry& e = entries_[static_cast<size_t>(i)];
  if (fresh) std::memcpy(bytes(i), state, static_cast<size_t>(bytes_each_));
  // A shared entry stays shared; a rolling one moves on with its sequence.
  if (fresh) e.owner = owner;
  e.hash = hash;
  e.n_pos = n_pos;
  e.used = ++tick_;
  return i;
}

void StateCheckpoints::restore(int32_t i, uint8_t* state) {
  CHECK(i >= 0 && i < capacity() && entries_[static_cast<size_t>(i)].n_pos > 0);
  std::memcpy(state, bytes(i), static_cast<size_t>(bytes_each_));
  entries_[static_cast<size_t>(i)].used = ++tick_;
}

}  // namespace edge
