// Memory ledger: every allocation the engine makes carries a category tag, so that
// `edge-infer memory` and /metrics can put what we think we hold beside what the kernel
// says we hold (RssAnon / RssFile) and name the unattributed remainder.
//
// Counters are process-wide atomics (current and peak per category). Three ways to tag:
//   - TaggedBuffer: owns an aligned heap block or an anonymous mmap, tagged for its life;
//   - TaggedAllocator<T>: a std allocator, e.g. std::vector<float, TaggedAllocator<float>>;
//   - ledger_add / ledger_sub (or LedgerCharge, its RAII form) for memory allocated
//     elsewhere (a library's tables, a std::vector whose type cannot change).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>

#include "core/status.h"

namespace edge {

enum class MemCategory : int {
  kWeights = 0,      // anonymous (repacked / converted) weights
  kWeightsMapped,    // file-backed weight pages (page cache, RssFile); reported apart
  kKv,               // KV cache blocks
  kScratch,          // activations, logits, per-step buffers
  kRope,             // RoPE cos/sin tables (0 when computed on the fly)
  kTokenizer,        // vocab, merges, tries
  kRuntime,          // scheduler, sequences, thread pool, server state
  kState,            // recurrent (linear attention) state per sequence, and its checkpoints
  kOther,
  kCount
};

constexpr int kMemCategoryCount = static_cast<int>(MemCategory::kCount);

// "weights", "weights_mapped", "kv", "scratch", "rope", "tokenizer", "runtime", "state",
// "other".
const char* mem_category_name(MemCategory c);
// True for the categories that live in anonymous memory (all but kWeightsMapped).
inline bool mem_category_is_anon(MemCategory c) { return c != MemCategory::kWeightsMapped; }

struct LedgerSnapshot {
  std::array<int64_t, kMemCategoryCount> current{};
  std::array<int64_t, kMemCategoryCount> peak{};
  int64_t current_of(MemCategory c) const { return current[static_cast<int>(c)]; }
  int64_t peak_of(MemCategory c) const { return peak[static_cast<int>(c)]; }
  // Sum of current bytes over the anonymous categories (what RssAnon should contain).
  int64_t anon_total() const;
  // Sum over every category, mapped included.
  int64_t total() const;
};

// Adds / removes bytes from a category (thread-safe, lock-free). Sub never makes the
// counter negative in a correct program; a negative result CHECK-fails in debug builds.
void ledger_add(MemCategory c, int64_t bytes);
void ledger_sub(MemCategory c, int64_t bytes);
int64_t ledger_current(MemCategory c);
int64_t ledger_peak(MemCategory c);
LedgerSnapshot ledger_snapshot();
// Resets every peak to the current value (e.g. after load, to measure a phase).
void ledger_reset_peaks();

// RAII charge for memory allocated elsewhere: adds on construction, subtracts on
// destruction or reset. Movable, not copyable.
class LedgerCharge {
 public:
  LedgerCharge() = default;
  LedgerCharge(MemCategory c, int64_t bytes) { set(c, bytes); }
  LedgerCharge(LedgerCharge&& o) noexcept { *this = static_cast<LedgerCharge&&>(o); }
  LedgerCharge& operator=(LedgerCharge&& o) noexcept;
  LedgerCharge(const LedgerCharge&) = delete;
  LedgerCharge& operator=(const LedgerCharge&) = delete;
  ~LedgerCharge() { reset(); }

  // Replaces the charge (subtracts the old amount, adds the new).
  void set(MemCategory c, int64_t bytes);
  void reset();
  int64_t bytes() const { return bytes_; }
  MemCategory category() const { return cat_; }

 private:
  MemCategory cat_ = MemCategory::kOther;
  int64_t bytes_ = 0;
};

// An owned, aligned, zero-initialised block tagged with a category for its whole life.
// Kind::kHeap uses aligned operator new; Kind::kAnonMmap maps anonymous pages
// (MAP_PRIVATE|MAP_ANONYMOUS) so that freeing returns them to the OS at once and
// untouched pages cost nothing until written. The ledger is charged the full size.
class TaggedBuffer {
 public:
  enum class Kind { kHeap, kAnonMmap };

  TaggedBuffer() = default;
  // Returns an empty buffer (data()==nullptr) when bytes==0 or the allocation fails;
  // callers that can fail use allocate() instead.
  TaggedBuffer(MemCategory c, size_t bytes, Kind kind = Kind::kHeap, size_t alignment = 64);
  TaggedBuffer(TaggedBuffer&& o) noexcept { *this = static_cast<TaggedBuffer&&>(o); }
  TaggedBuffer& operator=(TaggedBuffer&& o) noexcept;
  TaggedBuffer(const TaggedBuffer&) = delete;
  TaggedBuffer& operator=(const TaggedBuffer&) = delete;
  ~TaggedBuffer() { release(); }

  // false when the OS refused the memory.
  bool allocate(MemCategory c, size_t bytes, Kind kind = Kind::kHeap, size_t alignment = 64);
  void release();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  template <typename T> T* as() { return reinterpret_cast<T*>(data_); }
  template <typename T> const T* as() const { return reinterpret_cast<const T*>(data_); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  MemCategory category() const { return cat_; }
  Kind kind() const { return kind_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t alignment_ = 64;
  MemCategory cat_ = MemCategory::kOther;
  Kind kind_ = Kind::kHeap;
};

// std allocator that charges the ledger. The category is part of the type so that
// rebinding (std containers' node allocators) keeps it, and allocators compare equal.
template <typename T, MemCategory C = MemCategory::kScratch>
struct TaggedAllocator {
  using value_type = T;
  template <typename U> struct rebind { using other = TaggedAllocator<U, C>; };

  TaggedAllocator() noexcept = default;
  template <typename U>
  TaggedAllocator(const TaggedAllocator<U, C>&) noexcept {}  // NOLINT: rebind converts

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    T* p = static_cast<T*>(::operator new(bytes, std::align_val_t{alignment()}));
    ledger_add(C, static_cast<int64_t>(bytes));
    return p;
  }
  void deallocate(T* p, size_t n) noexcept {
    ledger_sub(C, static_cast<int64_t>(n * sizeof(T)));
    ::operator delete(p, std::align_val_t{alignment()});
  }
  static constexpr size_t alignment() { return alignof(T) > 64 ? alignof(T) : 64; }

  template <typename U>
  bool operator==(const TaggedAllocator<U, C>&) const noexcept { return true; }
};

// Parses a byte size: "1000000", "192MiB", "2GiB", "1.5GB", "64k", "512 MB" (binary
// KiB/MiB/GiB/TiB and K/M/G/T = 1024^n; decimal kB/MB/GB/TB = 1000^n). Rejects negative,
// empty, unknown suffixes and values that overflow int64.
Expected<int64_t> parse_byte_size(const std::string& text);

// Bytes the C heap (malloc) has handed out and not got back: mallinfo2 uordblks + hblkhd.
// -1 where the allocator cannot say (e.g. under a sanitizer's allocator). Used to measure
// what a library-style object (a tokenizer, parsed metadata) holds: the difference across
// its construction on one thread.
int64_t heap_in_use_bytes();
// Returns freed heap arenas to the OS (malloc_trim), e.g. after load. False if none.
bool release_free_heap();

// Human-readable byte count: "512 B", "1.50 KiB", "192.0 MiB", "2.00 GiB".
std::string format_bytes(int64_t bytes);

}  // namespace edge
