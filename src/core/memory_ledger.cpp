#include "core/memory_ledger.h"

#include <malloc.h>
#include <sys/mman.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/check.h"

namespace edge {
namespace {

struct Counters {
  std::array<std::atomic<int64_t>, kMemCategoryCount> current{};
  std::array<std::atomic<int64_t>, kMemCategoryCount> peak{};
};

Counters& counters() {
  static Counters c;  // zero-initialised atomics; lives for the whole process
  return c;
}

int index_of(MemCategory c) {
  const int i = static_cast<int>(c);
  CHECK(i >= 0 && i < kMemCategoryCount);
  return i;
}

void raise_peak(std::atomic<int64_t>& peak, int64_t value) {
  int64_t seen = peak.load(std::memory_order_relaxed);
  while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

}  // namespace

const char* mem_category_name(MemCategory c) {
  switch (c) {
    case MemCategory::kWeights: return "weights";
    case MemCategory::kWeightsMapped: return "weights_mapped";
    case MemCategory::kKv: return "kv";
    case MemCategory::kScratch: return "scratch";
    case MemCategory::kRope: return "rope";
    case MemCategory::kTokenizer: return "tokenizer";
    case MemCategory::kRuntime: return "runtime";
    case MemCategory::kState: return "state";
    case MemCategory::kOther: return "other";
    case MemCategory::kCount: break;
  }
  return "?";
}

int64_t LedgerSnapshot::anon_total() const {
  int64_t sum = 0;
  for (int i = 0; i < kMemCategoryCount; ++i) {
    if (mem_category_is_anon(static_cast<MemCategory>(i))) sum += current[i];
  }
  return sum;
}

int64_t LedgerSnapshot::total() const {
  int64_t sum = 0;
  for (int64_t v : current) sum += v;
  return sum;
}

void ledger_add(MemCategory c, int64_t bytes) {
  if (bytes == 0) return;
  auto& k = counters();
  const int i = index_of(c);
  const int64_t now = k.current[i].fetch_add(bytes, std::memory_order_relaxed) + bytes;
  raise_peak(k.peak[i], now);
}

void ledger_sub(MemCategory c, int64_t bytes) {
  if (bytes == 0) return;
  const int64_t now =
      counters().current[index_of(c)].fetch_sub(bytes, std::memory_order_relaxed) - bytes;
  CHECK_MSG(now >= 0, "memory ledger: more bytes released than were charged");
}

int64_t ledger_current(MemCategory c) {
  return counters().current[index_of(c)].load(std::memory_order_relaxed);
}

int64_t ledger_peak(MemCategory c) {
  return counters().peak[index_of(c)].load(std::memory_order_relaxed);
}

LedgerSnapshot ledger_snapshot() {
  LedgerSnapshot s;
  auto& k = counters();
  for (int i = 0; i < kMemCategoryCount; ++i) {
    s.current[i] = k.current[i].load(std::memory_order_relaxed);
    s.peak[i] = k.peak[i].load(std::memory_order_relaxed);
  }
  return s;
}

void ledger_reset_peaks() {
  auto& k = counters();
  for (int i = 0; i < kMemCategoryCount; ++i) {
    k.peak[i].store(k.current[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
}

// ---- LedgerCharge ----

LedgerCharge& LedgerCharge::operator=(LedgerCharge&& o) noexcept {
  if (this != &o) {
    reset();
    cat_ = o.cat_;
    bytes_ = o.bytes_;
    o.bytes_ = 0;
  }
  return *this;
}

void LedgerCharge::set(MemCategory c, int64_t bytes) {
  reset();
  cat_ = c;
  bytes_ = bytes;
  ledger_add(cat_, bytes_);
}

void LedgerCharge::reset() {
  if (bytes_ != 0) ledger_sub(cat_, bytes_);
  bytes_ = 0;
}

// ---- TaggedBuffer ----

TaggedBuffer::TaggedBuffer(MemCategory c, size_t bytes, Kind kind, size_t alignment) {
  allocate(c, bytes, kind, alignment);
}

TaggedBuffer& TaggedBuffer::operator=(TaggedBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = o.data_;
    size_ = o.size_;
    alignment_ = o.alignment_;
    cat_ = o.cat_;
    kind_ = o.kind_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

bool TaggedBuffer::allocate(MemCategory c, size_t bytes, Kind kind, size_t alignment) {
  release();
  cat_ = c;
  kind_ = kind;
  alignment_ = alignment < alignof(std::max_align_t) ? alignof(std::max_align_t) : alignment;
  if (bytes == 0) return true;
  void* p = nullptr;
  if (kind == Kind::kAnonMmap) {
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
  } else {
    // Round up so aligned new gets a multiple of the alignment, then zero like mmap does.
    const size_t rounded = (bytes + alignment_ - 1) / alignment_ * alignment_;
    p = ::operator new(rounded, std::align_val_t{alignment_}, std::nothrow);
    if (p == nullptr) return false;
    std::memset(p, 0, rounded);
  }
  data_ = static_cast<uint8_t*>(p);
  size_ = bytes;
  ledger_add(cat_, static_cast<int64_t>(size_));
  return true;
}

void TaggedBuffer::release() {
  if (data_ == nullptr) return;
  if (kind_ == Kind::kAnonMmap) {
    munmap(data_, size_);
  } else {
    ::operator delete(data_, std::align_val_t{alignment_});
  }
  ledger_sub(cat_, static_cast<int64_t>(size_));
  data_ = nullptr;
  size_ = 0;
}

// ---- sizes ----

Expected<int64_t> parse_byte_size(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  const size_t num_start = i;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  const std::string num = text.substr(num_start, i - num_start);
  if (num.empty() || num == "." || num.find('.') != num.rfind('.')) {
    return Status::invalid_argument("bad size '" + text + "' (expected e.g. 1000000, 192MiB, 2GiB)");
  }
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  std::string unit;
  for (; i < text.size(); ++i) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) break;
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  }
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i != text.size()) return Status::invalid_argument("bad size '" + text + "'");
  double mult = 1;
  struct Unit { const char* name; double mult; };
  static const Unit kUnits[] = {
      {"", 1}, {"b", 1},
      {"k", 1024.0}, {"kib", 1024.0}, {"ki", 1024.0}, {"kb", 1e3},
      {"m", 1048576.0}, {"mib", 1048576.0}, {"mi", 1048576.0}, {"mb", 1e6},
      {"g", 1073741824.0}, {"gib", 1073741824.0}, {"gi", 1073741824.0}, {"gb", 1e9},
      {"t", 1099511627776.0}, {"tib", 1099511627776.0}, {"ti", 1099511627776.0}, {"tb", 1e12},
  };
  bool found = false;
  for (const Unit& u : kUnits) {
    if (unit == u.name) { mult = u.mult; found = true; break; }
  }
  if (!found) return Status::invalid_argument("bad size unit '" + unit + "' in '" + text + "'");
  const double value = std::strtod(num.c_str(), nullptr) * mult;
  if (!std::isfinite(value) || value >= 9.2e18) {
    return Status::invalid_argument("size '" + text + "' is too large");
  }
  return static_cast<int64_t>(std::llround(value));
}

int64_t heap_in_use_bytes() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 mi = mallinfo2();
  const int64_t used = static_cast<int64_t>(mi.uordblks + mi.hblkhd);
  return used > 0 ? used : -1;
#else
  return -1;
#endif
}

bool release_free_heap() {
#if defined(__GLIBC__)
  return malloc_trim(0) != 0;
#else
  return false;
#endif
}

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  const bool neg = bytes < 0;
  double v = std::fabs(static_cast<double>(bytes));
  char buf[64];
  if (v < 1024) {
    std::snprintf(buf, sizeof(buf), "%s%lld B", neg ? "-" : "", static_cast<long long>(v));
    return buf;
  }
  int u = -1;
  while (v >= 1024 && u < 3) { v /= 1024; ++u; }
  std::snprintf(buf, sizeof(buf), "%s%.*f %s", neg ? "-" : "", v < 10 ? 2 : 1, v, units[u]);
  return buf;
}

}  // namespace edge
