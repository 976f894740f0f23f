// Tensors between pipeline processes through shared memory, with an explicit lifetime.
//
// The producer writes a tensor once, into a memfd buffer it owns and has mapped; only a
// small descriptor crosses the control socket. The consumer maps each buffer read-only and
// reads the bytes in place. A buffer goes back to the producer's free list only when the
// consumer releases it, never before: until then the consumer's view of it is stable, and a
// consumer that holds every slot stalls its producer (back-pressure) instead of a queue
// growing. Messages (worker_protocol framing, so they share the worker's socket):
//
//   announce {buffer, bytes, dedicated} + 1 fd   producer -> consumer, once per buffer,
//                                                before any descriptor that names it
//   {..., tensor: {buffer, offset, bytes, dtype, shape}}
//                                                the descriptor, inside the producer's own
//                                                message (a worker event, a request input)
//   release {buffer}                             consumer -> producer: finished reading
//
// One tensor per buffer at a time. A tensor larger than a slot gets a dedicated buffer of
// its own size (announced with dedicated: true, freed on both sides once released); it
// still takes one of the pool's slots, so the slot count bounds what the consumer holds.
//
// Buffers are sealed against shrinking and growing (then against further seals): a peer
// that truncated a mapped buffer would make the other side SIGBUS on its next read. Where
// the kernel offers F_SEAL_FUTURE_WRITE the consumer cannot write to them either. The
// consumer refuses a buffer that is not sealed, and a descriptor that does not fit its
// buffer or whose byte count is not shape x dtype.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "pipeline/worker/worker_protocol.h"

namespace edge::pipeline {

// Element types of tensors that cross a process: the names contracts use for port dtypes
// (PortSpec::dtype). formats' DType has no u8 and spells s16 "i16", so it is not reused.
enum class TensorDtype : uint8_t { kF32, kF16, kI32, kU8, kS16 };
const char* tensor_dtype_name(TensorDtype t);  // "f32", "f16", "i32", "u8", "s16"
uint64_t tensor_dtype_bytes(TensorDtype t);
Expected<TensorDtype> parse_tensor_dtype(std::string_view name);

inline constexpr size_t kMaxTensorRank = 8;

// Where a tensor lies in an announced buffer.
struct TensorDescriptor {
  uint64_t buffer = 0;  // id from the buffer's announce
  uint64_t offset = 0;  // bytes from the buffer's start, a multiple of the element size
  uint64_t bytes = 0;   // product(shape) x element size
  TensorDtype dtype = TensorDtype::kF32;
  std::vector<int64_t> shape;  // row-major, outermost first, e.g. [n_media, n_embd]
};
nlohmann::json descriptor_json(const TensorDescriptor& d);
// Checks types, the dtype, rank, dims >= 0, bytes == product(shape) x element size and the
// offset's alignment; whether it fits its buffer is the mapper's check.
Expected<TensorDescriptor> parse_descriptor(const nlohmann::json& j);

// The consumer's acknowledgement of one buffer: {"type": "release", "buffer": id}.
nlohmann::json release_message(uint64_t buffer);

// A memory region this object maps and unmaps.
class ShmMapping {
 public:
  ShmMapping() = default;
  ShmMapping(void* data, uint64_t size) : data_(data), size_(size) {}
  ShmMapping(ShmMapping&& o) noexcept;
  ShmMapping& operator=(ShmMapping&& o) noexcept;
  ~ShmMapping();
  uint8_t* data() const { return static_cast<uint8_t*>(data_); }
  uint64_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  uint64_t size_ = 0;
};

// A sealed memfd of fixed size, mapped read-write here (the producer's side of a buffer).
class ShmBuffer {
 public:
  // `name` shows in /proc/PID/maps and fd listings ("memfd:edge-tensor:NAME").
  static Expected<ShmBuffer> create(uint64_t bytes, const std::string& name);
  int fd() const { return fd_.get(); }
  std::span<uint8_t> bytes() const { return {map_.data(), map_.size()}; }
  uint64_t size() const { return map_.size(); }

 private:
  UniqueFd fd_;
  ShmMapping map_;  // PROT_READ | PROT_WRITE, MAP_SHARED, the whole buffer
};

struct TensorPoolOptions {
  std::string name = "tensors";   // names the pool in errors, e.g. "vision -> lm"
  int32_t slots = 4;              // tensors the consumer may hold at once
  uint64_t slot_bytes = 1 << 20;  // each slot's buffer
  uint64_t max_dedicated_bytes = uint64_t{1} << 30;  // the largest tensor over a slot's size
};

// A writable place for one tensor, from acquire() until publish() or discard().
struct TensorSlot {
  uint64_t buffer = 0;
  std::span<uint8_t> data;  // [bytes asked for]; write the tensor here, then publish
};

// What to send for a published tensor: `announce` first (with `announce_fd`, owned by the
// pool, through send_message_with_fds) when this is the buffer's first use, then the
// descriptor inside the producer's own message.
struct PublishedTensor {
  nlohmann::json descriptor;
  std::optional<nlohmann::json> announce;
  int announce_fd = -1;
};

struct TensorPoolStats {
  int32_t slots = 0;
  int32_t in_use = 0;      // acquired or published, not yet released
  int32_t high_water = 0;  // most in use at once
  uint64_t stalls = 0;     // acquire() calls that found every slot in use
  uint64_t published = 0;
  uint64_t dedicated = 0;  // tensors that needed a buffer larger than a slot
};

// The producer's buffers. Thread-safe: release() may come from a reader thread while the
// producer waits in acquire().
class TensorPool {
 public:
  // Reads and applies one message from the consumer (calling release() for a release),
  // waiting at most `left`; for a producer with no reader thread (the worker's loop).
  using Pump = std::function<Status(std::chrono::milliseconds left)>;

  // Creates the slots' buffers up front (memfd pages are allocated only when written).
  static Expected<std::unique_ptr<TensorPool>> create(TensorPoolOptions o);
  ~TensorPool();

  // A slot for a tensor of `bytes`. While the consumer holds every slot, waits up to
  // `timeout` for a release: from another thread, or through `pump` when given. Then
  // deadline_exceeded naming the pool; unavailable after close().
  Expected<TensorSlot> acquire(uint64_t bytes, std::chrono::milliseconds timeout,
                               const Pump& pump = nullptr);
  // Hands the written slot to the consumer: bytes = product(shape) x dtype, at most what was
  // acquired. The slot stays the consumer's until release().
  Expected<PublishedTensor> publish(const TensorSlot& slot, TensorDtype dtype,
                                    const std::vector<int64_t>& shape);
  // The producer gives up a slot it acquired and did not publish.
  Status discard(const TensorSlot& slot);
  // The consumer's acknowledgement: the buffer is free again (a dedicated one is freed).
  // An unknown id, or one not published (a second release), is invalid_argument.
  Status release(uint64_t buffer);
  Status release(const nlohmann::json& release_msg);  // {"type": "release", "buffer": id}
  // The consumer is gone: waiters and later acquire() calls get unavailable.
  void close();

  TensorPoolStats stats() const;
  const std::string& name() const { return o_.name; }

 private:
  enum class State { kFree, kAcquired, kPublished };
  struct Entry {
    ShmBuffer buf;
    State state = State::kFree;
    bool announced = false;
    bool dedicated = false;
    uint64_t acquired_bytes = 0;
  };
  explicit TensorPool(TensorPoolOptions o) : o_(std::move(o)) {}
  Status wait_for_slot(std::unique_lock<std::mutex>& lk, std::chrono::milliseconds timeout,
                       const Pump& pump);
  Expected<uint64_t> take_slot(uint64_t bytes);  // with mu_ held and a slot free
  Expected<Entry*> entry_in(uint64_t buffer, State want, const char* what);
  void free_entry(uint64_t buffer);  // with mu_ held

  const TensorPoolOptions o_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Entry> entries_;  // by buffer id; ids are never reused
  std::vector<uint64_t> free_;         // free slot buffers, the last released on top
  uint64_t next_id_ = 1;
  int32_t in_use_ = 0;
  TensorPoolStats stats_;
  bool closed_ = false;
};

// A tensor as the consumer sees it: read-only, in the producer's buffer.
struct SharedTensor {
  uint64_t buffer = 0;
  std::span<const uint8_t> bytes;  // valid until release(buffer) or the mapper's end
  TensorDtype dtype = TensorDtype::kF32;
  std::vector<int64_t> shape;
  // Typed view, aligned (page-aligned buffer, offset a multiple of the element size). T is
  // the dtype's type: float (f32), int32_t (i32), uint8_t (u8), int16_t (s16), uint16_t
  // (f16 bits); check `dtype` first.
  template <typename T>
  std::span<const T> as() const {
    return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
};

// The consumer's side: the producer's announced buffers, mapped read-only.
class TensorMapper {
 public:
  explicit TensorMapper(std::string name = "tensors") : name_(std::move(name)) {}

  // An announce and the descriptors that came with it (exactly one: the buffer). Refused:
  // another count, an id already mapped, a size other than announced, a buffer not sealed
  // against shrinking and growing. Every descriptor is closed either way (the mapping
  // outlives it).
  Status add(const nlohmann::json& announce, std::vector<UniqueFd> fds);
  // The tensor a descriptor names, after checking it against its buffer. The buffer is then
  // the consumer's until release(); a descriptor naming a buffer not yet released is refused
  // (the producer would be rewriting bytes the consumer may still read).
  Expected<SharedTensor> view(const nlohmann::json& descriptor);
  // The consumer has finished with the tensor in `buffer`: returns the release message to
  // send. A dedicated buffer is unmapped here, so its views end now.
  Expected<nlohmann::json> release(uint64_t buffer);

  size_t mapped_buffers() const { return buffers_.size(); }
  size_t held_buffers() const;

 private:
  struct Mapped {
    ShmMapping map;  // PROT_READ, MAP_SHARED, the whole buffer
    bool dedicated = false;
    bool held = false;  // viewed and not yet released
  };
  std::string name_;
  std::map<uint64_t, Mapped> buffers_;
};

}  // namespace edge::pipeline
