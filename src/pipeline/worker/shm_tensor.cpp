#include "pipeline/worker/shm_tensor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#ifndef F_SEAL_FUTURE_WRITE  // Linux 5.1; older headers lack it, the kernel may not
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

namespace edge::pipeline {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int32_t kMaxSlots = 1024;

std::string errno_text(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

// A non-negative integer field. Parsed JSON keeps non-negative numbers unsigned; JSON built
// in this process may hold them signed, so both are accepted.
Expected<uint64_t> u64_field(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) return Status::invalid_format(fmt::format("no '{}'", key));
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (it->is_number_integer() && it->get<int64_t>() >= 0)
    return static_cast<uint64_t>(it->get<int64_t>());
  return Status::invalid_format(fmt::format("'{}' is not a non-negative integer", key));
}

bool has_type(const nlohmann::json& j, const char* type) {
  return j.is_object() && j.contains("type") && j["type"].is_string() && j["type"] == type;
}

// product(shape) x element size, refusing a rank, a dim or a product out of range.
Expected<uint64_t> tensor_bytes(TensorDtype dtype, const std::vector<int64_t>& shape) {
  if (shape.size() > kMaxTensorRank)
    return Status::invalid_format(
        fmt::format("rank {} (at most {})", shape.size(), kMaxTensorRank));
  uint64_t n = tensor_dtype_bytes(dtype);
  for (int64_t d : shape) {
    if (d < 0) return Status::invalid_format(fmt::format("a negative dimension {}", d));
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n))
      return Status::invalid_format("a shape whose byte count overflows 64 bits");
  }
  return n;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

}  // namespace

// ---- dtypes and descriptors ----

const char* tensor_dtype_name(TensorDtype t) {
  switch (t) {
    case TensorDtype::kF32:
      return "f32";
    case TensorDtype::kF16:
      return "f16";
    case TensorDtype::kI32:
      return "i32";
    case TensorDtype::kU8:
      return "u8";
    case TensorDtype::kS16:
      return "s16";
  }
  return "?";
}

uint64_t tensor_dtype_bytes(TensorDtype t) {
  switch (t) {
    case TensorDtype::kF32:
    case TensorDtype::kI32:
      return 4;
    case TensorDtype::kF16:
    case TensorDtype::kS16:
      return 2;
    case TensorDtype::kU8:
      return 1;
  }
  return 1;
}

Expected<TensorDtype> parse_tensor_dtype(std::string_view name) {
  for (TensorDtype t : {TensorDtype::kF32, TensorDtype::kF16, TensorDtype::kI32, TensorDtype::kU8,
                        TensorDtype::kS16})
    if (name == tensor_dtype_name(t)) return t;
  return Status::invalid_format(
      fmt::format("dtype '{}' (one of f32, f16, i32, u8, s16 expected)", name));
}

nlohmann::json descriptor_json(const TensorDescriptor& d) {
  return {{"buffer", d.buffer},
          {"offset", d.offset},
          {"bytes", d.bytes},
          {"dtype", tensor_dtype_name(d.dtype)},
          {"shape", d.shape}};
}

Expected<TensorDescriptor> parse_descriptor(const nlohmann::json& j) {
  if (!j.is_object()) return Status::invalid_format("a tensor descriptor that is not an object");
  TensorDescriptor d;
  ASSIGN_OR_RETURN(d.buffer, u64_field(j, "buffer"));
  ASSIGN_OR_RETURN(d.offset, u64_field(j, "offset"));
  ASSIGN_OR_RETURN(d.bytes, u64_field(j, "bytes"));
  const auto dt = j.find("dtype");
  if (dt == j.end() || !dt->is_string()) return Status::invalid_format("no 'dtype' string");
  ASSIGN_OR_RETURN(d.dtype, parse_tensor_dtype(dt->get<std::string>()));
  const auto sh = j.find("shape");
  if (sh == j.end() || !sh->is_array()) return Status::invalid_format("no 'shape' array");
  if (sh->size() > kMaxTensorRank)
    return Status::invalid_format(fmt::format("rank {} (at most {})", sh->size(), kMaxTensorRank));
  for (const auto& dim : *sh) {
    if (!dim.is_number_integer() || (!dim.is_number_unsigned() && dim.get<int64_t>() < 0) ||
        (dim.is_number_unsigned() && dim.get<uint64_t>() > uint64_t{INT64_MAX}))
      return Status::invalid_format("a shape dimension that is not a non-negative integer");
    d.shape.push_back(dim.get<int64_t>());
  }
  ASSIGN_OR_RETURN(const uint64_t want, tensor_bytes(d.dtype, d.shape));
  if (d.bytes != want)
    return Status::invalid_format(fmt::format("{} bytes for {} {} ({} expected)", d.bytes,
                                              tensor_dtype_name(d.dtype), shape_text(d.shape),
                                              want));
  if (d.offset % tensor_dtype_bytes(d.dtype) != 0)
    return Status::invalid_format(fmt::format("offset {} is not a multiple of the {}-byte {}",
                                              d.offset, tensor_dtype_bytes(d.dtype),
                                              tensor_dtype_name(d.dtype)));
  return d;
}

nlohmann::json release_message(uint64_t buffer) {
  return {{"type", "release"}, {"buffer", buffer}};
}

// ---- mappings and buffers ----

ShmMapping::ShmMapping(ShmMapping&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

ShmMapping& ShmMapping::operator=(ShmMapping&& o) noexcept {
  if (this != &o) {
    if (data_) ::munmap(data_, size_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

ShmMapping::~ShmMapping() {
  if (data_) ::munmap(data_, size_);
}

Expected<ShmBuffer> ShmBuffer::create(uint64_t bytes, const std::string& name) {
  if (bytes == 0) return Status::invalid_argument("a shared buffer of 0 bytes");
  const std::string label = ("edge-tensor:" + name).substr(0, 240);  // memfd names: < 250
  ShmBuffer b;
  b.fd_.reset(::memfd_create(label.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!b.fd_) return Status::io_error(errno_text("memfd_create"));
  if (::ftruncate(b.fd_.get(), static_cast<off_t>(bytes)) != 0)
    return Status::io_error(errno_text("ftruncate of a shared buffer"));
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, b.fd_.get(), 0);
  if (p == MAP_FAILED) return Status::io_error(errno_text("mmap of a shared buffer"));
  b.map_ = ShmMapping(p, bytes);
  // Mapped first: F_SEAL_FUTURE_WRITE leaves this writable mapping alone but refuses the
  // consumer a writable one. Kernels before 5.1 do not know it: seal size only.
  const int size_seals = F_SEAL_SHRINK | F_SEAL_GROW;
  if (::fcntl(b.fd_.get(), F_ADD_SEALS, size_seals | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0 &&
      ::fcntl(b.fd_.get(), F_ADD_SEALS, size_seals | F_SEAL_SEAL) != 0)
    return Status::io_error(errno_text("sealing a shared buffer"));
  return b;
}

// ---- TensorPool: the producer ----

Expected<std::unique_ptr<TensorPool>> TensorPool::create(TensorPoolOptions o) {
  if (o.slots < 1 || o.slots > kMaxSlots || o.slot_bytes == 0)
    return Status::invalid_argument(
        fmt::format("tensor pool '{}': {} slots of {} bytes (1 to {} slots of at least 1 byte)",
                    o.name, o.slots, o.slot_bytes, kMaxSlots));
  std::unique_ptr<TensorPool> pool(new TensorPool(std::move(o)));
  pool->stats_.slots = pool->o_.slots;
  for (int32_t i = 0; i < pool->o_.slots; ++i) {
    const uint64_t id = pool->next_id_++;
    auto buf = ShmBuffer::create(pool->o_.slot_bytes, fmt::format("{}:{}", pool->o_.name, id));
    if (!buf.ok()) return buf.status().with_context("tensor pool '" + pool->o_.name + "'");
    pool->entries_.emplace(id, Entry{std::move(*buf)});
    pool->free_.push_back(id);
  }
  std::reverse(pool->free_.begin(), pool->free_.end());  // buffer 1 is handed out first
  return pool;
}

TensorPool::~TensorPool() = default;

Expected<TensorSlot> TensorPool::acquire(uint64_t bytes, milliseconds timeout, const Pump& pump) {
  if (bytes > o_.slot_bytes && bytes > o_.max_dedicated_bytes)
    return Status::resource_exhausted(
        fmt::format("tensor pool '{}': a tensor of {} bytes (slots hold {}, a dedicated buffer "
                    "at most {})",
                    o_.name, bytes, o_.slot_bytes, o_.max_dedicated_bytes));
  std::unique_lock<std::mutex> lk(mu_);
  RETURN_IF_ERROR(wait_for_slot(lk, timeout, pump));
  ASSIGN_OR_RETURN(const uint64_t id, take_slot(bytes));
  return TensorSlot{id, entries_.at(id).buf.bytes().first(bytes)};
}

Status TensorPool::wait_for_slot(std::unique_lock<std::mutex>& lk, milliseconds timeout,
                                 const Pump& pump) {
  const auto deadline = Clock::now() + timeout;
  if (!closed_ && in_use_ >= o_.slots) ++stats_.stalls;
  while (!closed_ && in_use_ >= o_.slots) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      return Status::deadline_exceeded(fmt::format(
          "tensor pool '{}': the consumer holds all {} slots and released none within {} ms",
          o_.name, o_.slots, timeout.count()));
    if (!pump) {
      cv_.wait_until(lk, deadline);
      continue;
    }
    // The pump reads the consumer's messages and calls release(), which takes the lock.
    lk.unlock();
    const Status st = pump(left);
    lk.lock();
    if (!st.ok() && st.code() != StatusCode::kDeadlineExceeded)
      return st.with_context(fmt::format("tensor pool '{}': waiting for a release", o_.name));
  }
  if (closed_) return Status::unavailable(fmt::format("tensor pool '{}' is closed", o_.name));
  return Status();
}

Expected<uint64_t> TensorPool::take_slot(uint64_t bytes) {
  uint64_t id;
  if (bytes > o_.slot_bytes) {
    // Larger than a slot: a buffer of its own, freed when released. Still one of the
    // slots, so the consumer never holds more than `slots` tensors.
    id = next_id_++;
    auto buf = ShmBuffer::create(bytes, fmt::format("{}:{}", o_.name, id));
    if (!buf.ok()) return buf.status().with_context("tensor pool '" + o_.name + "'");
    entries_.emplace(id, Entry{std::move(*buf), State::kFree, false, true});
    ++stats_.dedicated;
  } else {
    // A free slot buffer exists: slot buffers in use <= in_use_ < slots.
    id = free_.back();
    free_.pop_back();
  }
  Entry& e = entries_.at(id);
  e.state = State::kAcquired;
  e.acquired_bytes = bytes;
  ++in_use_;
  stats_.high_water = std::max(stats_.high_water, in_use_);
  return id;
}

Expected<TensorPool::Entry*> TensorPool::entry_in(uint64_t buffer, State want, const char* what) {
  auto it = entries_.find(buffer);
  if (it == entries_.end())
    return Status::invalid_argument(fmt::format(
        "tensor pool '{}': {} of buffer {}, which it does not have", o_.name, what, buffer));
  static constexpr const char* kStateName[] = {"free", "acquired", "published"};
  if (it->second.state != want)
    return Status::invalid_argument(fmt::format(
        "tensor pool '{}': {} of buffer {}, which is {} (not {}){}", o_.name, what, buffer,
        kStateName[static_cast<int>(it->second.state)], kStateName[static_cast<int>(want)],
        want == State::kPublished && it->second.state == State::kFree ? ": a second release" : ""));
  return &it->second;
}

Expected<PublishedTensor> TensorPool::publish(const TensorSlot& slot, TensorDtype dtype,
                                              const std::vector<int64_t>& shape) {
  auto bytes = tensor_bytes(dtype, shape);
  if (!bytes.ok())
    return Status::invalid_argument("tensor pool '" + o_.name + "': " + bytes.status().message());
  std::lock_guard<std::mutex> lk(mu_);
  ASSIGN_OR_RETURN(Entry * e, entry_in(slot.buffer, State::kAcquired, "publish"));
  if (*bytes > e->acquired_bytes)
    return Status::invalid_argument(fmt::format(
        "tensor pool '{}': publishing {} {} ({} bytes) in a slot acquired for {}", o_.name,
        tensor_dtype_name(dtype), shape_text(shape), *bytes, e->acquired_bytes));
  e->state = State::kPublished;
  ++stats_.published;
  PublishedTensor p;
  p.descriptor = descriptor_json(TensorDescriptor{slot.buffer, 0, *bytes, dtype, shape});
  if (!e->announced) {
    // The caller sends this before the descriptor; from here on the id alone names it.
    p.announce = nlohmann::json{{"type", "announce"},
                                {"buffer", slot.buffer},
                                {"bytes", e->buf.size()},
                                {"dedicated", e->dedicated}};
    p.announce_fd = e->buf.fd();
    e->announced = true;
  }
  return p;
}

Status TensorPool::discard(const TensorSlot& slot) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    ASSIGN_OR_RETURN(Entry * e, entry_in(slot.buffer, State::kAcquired, "discard"));
    (void)e;
    free_entry(slot.buffer);
  }
  cv_.notify_all();
  return Status();
}

Status TensorPool::release(uint64_t buffer) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    ASSIGN_OR_RETURN(Entry * e, entry_in(buffer, State::kPublished, "release"));
    (void)e;
    free_entry(buffer);
  }
  cv_.notify_all();
  return Status();
}

Status TensorPool::release(const nlohmann::json& release_msg) {
  if (!has_type(release_msg, "release"))
    return Status::invalid_argument("tensor pool '" + o_.name + "': not a release message");
  auto id = u64_field(release_msg, "buffer");
  if (!id.ok())
    return Status::invalid_argument("tensor pool '" + o_.name + "': release with " +
                                    id.status().message());
  return release(*id);
}

void TensorPool::free_entry(uint64_t buffer) {
  --in_use_;
  auto it = entries_.find(buffer);
  if (it->second.dedicated) {
    entries_.erase(it);  // unmapped and closed here; the consumer unmaps its side on release
    return;
  }
  it->second.state = State::kFree;
  free_.push_back(buffer);
}

void TensorPool::close() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

TensorPoolStats TensorPool::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  TensorPoolStats s = stats_;
  s.in_use = in_use_;
  return s;
}

// ---- TensorMapper: the consumer ----

Status TensorMapper::add(const nlohmann::json& announce, std::vector<UniqueFd> fds) {
  auto refuse = [&](const std::string& why) {
    return Status::invalid_format(fmt::format("tensors '{}': announce refused: {}", name_, why));
  };
  if (!has_type(announce, "announce")) return refuse("not an announce message");
  auto id = u64_field(announce, "buffer");
  auto bytes = u64_field(announce, "bytes");
  if (!id.ok() || !bytes.ok()) return refuse((id.ok() ? bytes : id).status().message());
  const auto ded = announce.find("dedicated");
  if (ded != announce.end() && !ded->is_boolean()) return refuse("'dedicated' is not a boolean");
  const bool dedicated = ded != announce.end() && ded->get<bool>();
  if (fds.size() != 1)
    return refuse(
        fmt::format("{} descriptors came with buffer {} (one expected)", fds.size(), *id));
  if (buffers_.count(*id)) return refuse(fmt::format("buffer {} is already mapped", *id));
  struct stat st {};
  if (::fstat(fds[0].get(), &st) != 0) return Status::io_error(errno_text("fstat"));
  if (*bytes == 0 || st.st_size < 0 || static_cast<uint64_t>(st.st_size) != *bytes)
    return refuse(fmt::format("buffer {} has {} bytes, announced as {}", *id,
                              static_cast<long long>(st.st_size), *bytes));
  // Unsealed, the producer could truncate it while we read: SIGBUS instead of an error.
  const int seals = ::fcntl(fds[0].get(), F_GET_SEALS);
  if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
    return refuse(
        fmt::format("buffer {} is not a memfd sealed against shrinking and growing", *id));
  void* p = ::mmap(nullptr, *bytes, PROT_READ, MAP_SHARED, fds[0].get(), 0);
  if (p == MAP_FAILED) return Status::io_error(errno_text("mmap of an announced buffer"));
  buffers_.emplace(*id, Mapped{ShmMapping(p, *bytes), dedicated, false});
  return Status();  // the descriptor closes here; the mapping keeps the buffer
}

Expected<SharedTensor> TensorMapper::view(const nlohmann::json& descriptor) {
  auto d = parse_descriptor(descriptor);
  if (!d.ok()) return d.status().with_context("tensors '" + name_ + "': descriptor refused");
  auto it = buffers_.find(d->buffer);
  if (it == buffers_.end())
    return Status::invalid_format(fmt::format(
        "tensors '{}': descriptor names buffer {}, which was never announced", name_, d->buffer));
  Mapped& m = it->second;
  if (m.held)
    return Status::invalid_format(fmt::format(
        "tensors '{}': buffer {} was reused before its release (a tensor in it is still held)",
        name_, d->buffer));
  if (d->offset > m.map.size() || d->bytes > m.map.size() - d->offset)
    return Status::invalid_format(
        fmt::format("tensors '{}': {} bytes at offset {} run past the end of buffer {} ({} bytes)",
                    name_, d->bytes, d->offset, d->buffer, m.map.size()));
  m.held = true;
  return SharedTensor{
      d->buffer, {m.map.data() + d->offset, d->bytes}, d->dtype, std::move(d->shape)};
}

Expected<nlohmann::json> TensorMapper::release(uint64_t buffer) {
  auto it = buffers_.find(buffer);
  if (it == buffers_.end() || !it->second.held)
    return Status::invalid_argument(
        fmt::format("tensors '{}': release of buffer {}, which holds no tensor", name_, buffer));
  it->second.held = false;
  if (it->second.dedicated) buffers_.erase(it);  // used once: unmapped now
  return release_message(buffer);
}

size_t TensorMapper::held_buffers() const {
  return static_cast<size_t>(
      std::count_if(buffers_.begin(), buffers_.end(), [](const auto& b) { return b.second.held; }));
}

}  // namespace edge::pipeline
