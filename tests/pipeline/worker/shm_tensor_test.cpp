// Tensors through shared memory with an explicit lifetime: bytes written by a producer are
// read identically by a consumer across a socket pair and across a real child process; a
// buffer is not rewritten while the consumer holds it; a consumer that stops releasing
// stalls its producer at the slot count and nothing is lost when it resumes; lying
// descriptors and announcements are refused; descriptors passed over the socket never leak;
// a peer cannot resize a sealed buffer.
#include "pipeline/worker/shm_tensor.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "pipeline/worker/worker_protocol.h"

namespace edge::pipeline {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

int count_open_fds() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

struct SocketPair {
  UniqueFd producer, consumer;
};

SocketPair socket_pair() {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0) << std::strerror(errno);
  return {UniqueFd(sv[0]), UniqueFd(sv[1])};
}

// Tensor `seq`'s contents: f32 [kRows, kCols], element k = seq * 1e4 + k (exact in f32).
constexpr int64_t kRows = 4, kCols = 64;
constexpr uint64_t kTensorBytes = kRows * kCols * sizeof(float);

void fill(std::span<uint8_t> out, int seq) {
  for (size_t k = 0; k < out.size() / sizeof(float); ++k) {
    const float v = static_cast<float>(seq * 10000 + static_cast<int>(k));
    std::memcpy(out.data() + k * sizeof(float), &v, sizeof(float));
  }
}

bool matches(const SharedTensor& t, int seq) {
  if (t.dtype != TensorDtype::kF32 || t.shape != std::vector<int64_t>{kRows, kCols}) return false;
  const auto v = t.as<float>();
  if (v.size() != static_cast<size_t>(kRows * kCols)) return false;
  for (size_t k = 0; k < v.size(); ++k)
    if (v[k] != static_cast<float>(seq * 10000 + static_cast<int>(k))) return false;
  return true;
}

// The producer's side of one tensor: a slot (waiting through `pump` if given), the bytes,
// the announce on the buffer's first use, then an event carrying the descriptor.
Expected<uint64_t> send_tensor(int sock, TensorPool& pool, int seq,
                               std::chrono::milliseconds timeout = 0ms,
                               const TensorPool::Pump& pump = nullptr) {
  ASSIGN_OR_RETURN(TensorSlot slot, pool.acquire(kTensorBytes, timeout, pump));
  fill(slot.data, seq);
  ASSIGN_OR_RETURN(PublishedTensor p, pool.publish(slot, TensorDtype::kF32, {kRows, kCols}));
  if (p.announce) {
    const int fd = p.announce_fd;
    RETURN_IF_ERROR(send_message_with_fds(sock, *p.announce, {&fd, 1}));
  }
  RETURN_IF_ERROR(send_message(sock, {{"type", "event"}, {"seq", seq}, {"tensor", p.descriptor}}));
  return slot.buffer;
}

// The consumer's side: announces are mapped until an event names its tensor.
Expected<std::pair<int, SharedTensor>> receive_tensor(int sock, TensorMapper& mapper) {
  for (;;) {
    ASSIGN_OR_RETURN(MessageWithFds m, receive_message_with_fds(sock, 10s));
    if (m.msg["type"] == "announce") {
      RETURN_IF_ERROR(mapper.add(m.msg, std::move(m.fds)));
      continue;
    }
    ASSIGN_OR_RETURN(SharedTensor t, mapper.view(m.msg["tensor"]));
    return std::make_pair(m.msg["seq"].get<int>(), t);
  }
}

// Releases `buffer` on the consumer's side and applies the release on the producer's.
void release_through(int consumer, int producer, TensorMapper& mapper, TensorPool& pool,
                     uint64_t buffer) {
  auto msg = mapper.release(buffer);
  ASSERT_TRUE(msg.ok()) << msg.status().to_string();
  ASSERT_TRUE(send_message(consumer, *msg).ok());
  auto got = receive_message(producer, 10s);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_TRUE(pool.release(*got).ok());
}

std::unique_ptr<TensorPool> make_pool(int32_t slots, uint64_t slot_bytes) {
  auto p = TensorPool::create({.name = "test pool", .slots = slots, .slot_bytes = slot_bytes});
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return p.ok() ? std::move(*p) : nullptr;
}

// A frame as worker_protocol writes it, sent with any descriptors, for what a correct sender
// never produces.
void send_raw(int sock, const std::string& body, std::span<const int> fds) {
  const uint32_t n = static_cast<uint32_t>(body.size());
  std::string frame = {static_cast<char>(n), static_cast<char>(n >> 8), static_cast<char>(n >> 16),
                       static_cast<char>(n >> 24)};
  frame += body;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  iovec iov{frame.data(), frame.size()};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control.data();
  mh.msg_controllen = control.size();
  cmsghdr* c = CMSG_FIRSTHDR(&mh);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  ASSERT_EQ(sendmsg(sock, &mh, 0), static_cast<ssize_t>(frame.size())) << std::strerror(errno);
}

std::vector<int> open_dev_null(int n) {
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) fds.push_back(open("/dev/null", O_RDONLY | O_CLOEXEC));
  return fds;
}

void close_all(const std::vector<int>& fds) {
  for (int fd : fds) close(fd);
}

TEST(TensorDtype, ContractNamesRoundTripAndOthersAreRefused) {
  for (const char* name : {"f32", "f16", "i32", "u8", "s16"}) {
    auto t = parse_tensor_dtype(name);
    ASSERT_TRUE(t.ok()) << name;
    EXPECT_STREQ(tensor_dtype_name(*t), name);
  }
  EXPECT_EQ(tensor_dtype_bytes(TensorDtype::kS16), 2u);
  EXPECT_EQ(tensor_dtype_bytes(TensorDtype::kU8), 1u);
  EXPECT_FALSE(parse_tensor_dtype("f64").ok());
  EXPECT_FALSE(parse_tensor_dtype("utf8").ok());
}

TEST(FdPassing, MessagesWithAndWithoutDescriptorsShareOneSocket) {
  const int fds_before = count_open_fds();
  {
    SocketPair s = socket_pair();
    auto buf = ShmBuffer::create(4096, "fd-passing");
    ASSERT_TRUE(buf.ok()) << buf.status().to_string();
    const int fd = buf->fd();
    ASSERT_TRUE(send_message(s.producer.get(), {{"type", "plain"}, {"n", 1}}).ok());
    ASSERT_TRUE(send_message_with_fds(s.producer.get(), {{"type", "with"}}, {&fd, 1}).ok());
    ASSERT_TRUE(send_message(s.producer.get(), {{"type", "plain"}, {"n", 2}}).ok());

    auto a = receive_message_with_fds(s.consumer.get(), 5s);
    auto b = receive_message_with_fds(s.consumer.get(), 5s);
    auto c = receive_message_with_fds(s.consumer.get(), 5s);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    EXPECT_EQ(a->msg["n"], 1);
    EXPECT_TRUE(a->fds.empty());
    EXPECT_EQ(b->msg["type"], "with");
    ASSERT_EQ(b->fds.size(), 1u);
    EXPECT_EQ(c->msg["n"], 2);
    EXPECT_TRUE(c->fds.empty());
    // The same file, and received close-on-exec (a worker's own children do not inherit it).
    struct stat mine {
    }, theirs{};
    ASSERT_EQ(fstat(fd, &mine), 0);
    ASSERT_EQ(fstat(b->fds[0].get(), &theirs), 0);
    EXPECT_EQ(mine.st_ino, theirs.st_ino);
    EXPECT_NE(b->fds[0].get(), fd);
    EXPECT_TRUE(fcntl(b->fds[0].get(), F_GETFD) & FD_CLOEXEC);
  }
  EXPECT_EQ(count_open_fds(), fds_before);
}

TEST(FdPassing, SurplusOrMalformedMessagesCloseTheirDescriptorsAndKeepTheStreamInStep) {
  SocketPair s = socket_pair();
  const int p = s.producer.get(), c = s.consumer.get();
  const std::vector<int> three = open_dev_null(3);
  const int fds_before = count_open_fds();

  // More than the receiver allows for this message.
  ASSERT_TRUE(send_message_with_fds(p, {{"type", "x"}}, three).ok());
  auto r = receive_message_with_fds(c, 5s, /*max_fds=*/1);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidFormat);
  // Descriptors sent to a side that reads plain messages: the message arrives, they do not.
  ASSERT_TRUE(send_message_with_fds(p, {{"type", "y"}}, three).ok());
  auto y = receive_message(c, 5s);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ((*y)["type"], "y");
  // A malformed body with descriptors attached.
  send_raw(p, "not json", three);
  EXPECT_EQ(receive_message_with_fds(c, 5s).status().code(), StatusCode::kInvalidFormat);
  // More than any message may carry: the kernel truncates, we refuse and close the rest.
  const std::vector<int> many = open_dev_null(static_cast<int>(kMaxMessageFds) + 4);
  send_raw(p, R"({"type":"z"})", many);
  close_all(many);
  auto z = receive_message_with_fds(c, 5s);
  EXPECT_EQ(z.status().code(), StatusCode::kInvalidFormat);
  EXPECT_NE(z.status().message().find("more than"), std::string::npos) << z.status().message();
  // Every refused message was read whole: the next one is intact.
  ASSERT_TRUE(send_message(p, {{"type", "after"}}).ok());
  auto after = receive_message_with_fds(c, 5s);
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_EQ(after->msg["type"], "after");

  EXPECT_EQ(count_open_fds(), fds_before);
  const std::vector<int> nine = open_dev_null(static_cast<int>(kMaxMessageFds) + 1);
  EXPECT_EQ(send_message_with_fds(p, {{"type", "x"}}, nine).code(), StatusCode::kInvalidArgument);
  close_all(nine);
  close_all(three);
}

TEST(ShmBuffer, IsSealedAgainstResizingAndOthersWriting) {
  auto buf = ShmBuffer::create(8192, "sealed");
  ASSERT_TRUE(buf.ok()) << buf.status().to_string();
  const int seals = fcntl(buf->fd(), F_GET_SEALS);
  EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
            F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  EXPECT_NE(ftruncate(buf->fd(), 0), 0);
  EXPECT_NE(ftruncate(buf->fd(), 1 << 20), 0);
  EXPECT_NE(fcntl(buf->fd(), F_ADD_SEALS, F_SEAL_WRITE), 0);  // sealed against more seals
  // What the owner writes through its mapping, a read-only mapping of the fd sees.
  buf->bytes()[100] = 42;
  void* ro = mmap(nullptr, 8192, PROT_READ, MAP_SHARED, buf->fd(), 0);
  ASSERT_NE(ro, MAP_FAILED);
  EXPECT_EQ(static_cast<const uint8_t*>(ro)[100], 42);
  munmap(ro, 8192);
  if (seals & F_SEAL_FUTURE_WRITE) {
    EXPECT_EQ(mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, buf->fd(), 0), MAP_FAILED);
    EXPECT_LT(pwrite(buf->fd(), "x", 1, 0), 0);
  }
  EXPECT_EQ(ShmBuffer::create(0, "empty").status().code(), StatusCode::kInvalidArgument);
}

TEST(TensorPipe, TensorCrossesASocketPairIntactAndIsAnnouncedOnce) {
  const int fds_before = count_open_fds();
  {
    SocketPair s = socket_pair();
    auto pool = make_pool(1, 4096);
    ASSERT_TRUE(pool);
    TensorMapper mapper("test");
    for (int seq = 0; seq < 3; ++seq) {
      auto slot = pool->acquire(kTensorBytes, 0ms);
      ASSERT_TRUE(slot.ok()) << slot.status().to_string();
      fill(slot->data, seq);
      auto pub = pool->publish(*slot, TensorDtype::kF32, {kRows, kCols});
      ASSERT_TRUE(pub.ok()) << pub.status().to_string();
      EXPECT_EQ(pub->announce.has_value(), seq == 0) << "a buffer is announced on first use only";
      if (pub->announce) {
        const int fd = pub->announce_fd;
        ASSERT_TRUE(send_message_with_fds(s.producer.get(), *pub->announce, {&fd, 1}).ok());
      }
      ASSERT_TRUE(send_message(s.producer.get(),
                               {{"type", "event"}, {"seq", seq}, {"tensor", pub->descriptor}})
                      .ok());
      auto got = receive_tensor(s.consumer.get(), mapper);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      EXPECT_EQ(got->first, seq);
      EXPECT_TRUE(matches(got->second, seq));
      EXPECT_EQ(std::memcmp(got->second.bytes.data(), slot->data.data(), kTensorBytes), 0);
      release_through(s.consumer.get(), s.producer.get(), mapper, *pool, slot->buffer);
    }
    EXPECT_EQ(mapper.mapped_buffers(), 1u);
    EXPECT_EQ(pool->stats().in_use, 0);
    EXPECT_EQ(pool->stats().published, 3u);
  }
  EXPECT_EQ(count_open_fds(), fds_before);
}

TEST(TensorPool, SlotIsNotReusedWhileTheConsumerHoldsIt) {
  SocketPair s = socket_pair();
  auto pool = make_pool(2, 4096);
  ASSERT_TRUE(pool);
  TensorMapper mapper("test");
  const int p = s.producer.get(), c = s.consumer.get();

  auto a = send_tensor(p, *pool, 0);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  auto held = receive_tensor(c, mapper);  // kept, not released
  ASSERT_TRUE(held.ok()) << held.status().to_string();
  // The producer writes more tensors: each lands in the other slot, never in the held one.
  for (int seq = 1; seq <= 4; ++seq) {
    auto b = send_tensor(p, *pool, seq);
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    EXPECT_NE(*b, *a) << "tensor " << seq << " was written into a slot the consumer holds";
    auto got = receive_tensor(c, mapper);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_TRUE(matches(got->second, seq));
    release_through(c, p, mapper, *pool, *b);
  }
  EXPECT_TRUE(matches(held->second, 0)) << "the held tensor's bytes changed";
  EXPECT_EQ(pool->stats().high_water, 2);

  // Released, the slot is the producer's again.
  release_through(c, p, mapper, *pool, *a);
  auto x = pool->acquire(16, 0ms), y = pool->acquire(16, 0ms);
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_TRUE(x->buffer == *a || y->buffer == *a);
}

TEST(TensorPool, ReleaseMustMatchAPublishedTensor) {
  auto pool = make_pool(2, 256);
  ASSERT_TRUE(pool);
  auto slot = pool->acquire(64, 0ms);
  ASSERT_TRUE(slot.ok());
  // Not yet published: the consumer cannot have it.
  EXPECT_EQ(pool->release(slot->buffer).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(pool->publish(*slot, TensorDtype::kU8, {64}).ok());
  EXPECT_EQ(pool->publish(*slot, TensorDtype::kU8, {64}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(pool->release(slot->buffer).ok());
  const Status twice = pool->release(slot->buffer);
  EXPECT_EQ(twice.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(twice.message().find("second release"), std::string::npos) << twice.message();
  EXPECT_EQ(pool->release(999).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(pool->release(json{{"type", "release"}, {"buffer", -1}}).ok());
  EXPECT_FALSE(pool->release(json{{"type", "ack"}, {"buffer", slot->buffer}}).ok());
  EXPECT_EQ(pool->stats().in_use, 0);

  // More than was acquired, or a shape that does not fit the dtype's bytes: refused.
  auto small = pool->acquire(16, 0ms);
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE(pool->publish(*small, TensorDtype::kF32, {8}).ok());  // 32 bytes > 16
  EXPECT_FALSE(pool->publish(*small, TensorDtype::kF32, {-1}).ok());
  // The producer may give back an unpublished slot; then it is free again.
  ASSERT_TRUE(pool->discard(*small).ok());
  EXPECT_FALSE(pool->discard(*small).ok());
  EXPECT_EQ(pool->stats().in_use, 0);
  EXPECT_FALSE(TensorPool::create({.slots = 0}).ok());
}

TEST(TensorPool, StallsAtTheSlotCountAndResumesAfterARelease) {
  auto pool = make_pool(2, 256);
  ASSERT_TRUE(pool);
  std::vector<TensorSlot> slots;
  for (int i = 0; i < 2; ++i) {
    auto s = pool->acquire(64, 0ms);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(pool->publish(*s, TensorDtype::kS16, {32}).ok());
    slots.push_back(*s);
  }
  // The consumer holds both: the producer waits, then gives up naming the pool.
  auto none = pool->acquire(64, 20ms);
  ASSERT_EQ(none.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(none.status().message().find("'test pool'"), std::string::npos);
  EXPECT_NE(none.status().message().find("all 2 slots"), std::string::npos);
  EXPECT_EQ(pool->stats().stalls, 1u);

  // A producer thread waits for a slot; the consumer's release lets it go, into that slot.
  Expected<TensorSlot> got = Status::internal("not run");
  std::thread producer([&] { got = pool->acquire(64, 60s); });
  while (pool->stats().stalls < 2) std::this_thread::yield();  // it is waiting now
  ASSERT_TRUE(pool->release(slots[0].buffer).ok());
  producer.join();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(got->buffer, slots[0].buffer);
  EXPECT_EQ(pool->stats().high_water, 2);

  // The consumer is gone: a waiting producer is told so rather than waiting out its time.
  Expected<TensorSlot> after_close = Status::internal("not run");
  std::thread waiter([&] { after_close = pool->acquire(64, 60s); });
  while (pool->stats().stalls < 3) std::this_thread::yield();
  pool->close();
  waiter.join();
  EXPECT_EQ(after_close.status().code(), StatusCode::kUnavailable);
}

TEST(TensorPool, OversizeTensorGetsADedicatedBufferFreedOnRelease) {
  const int fds_before = count_open_fds();
  {
    SocketPair s = socket_pair();
    auto pool = make_pool(1, 256);
    ASSERT_TRUE(pool);
    TensorMapper mapper("test");
    auto big = send_tensor(s.producer.get(), *pool, 7);  // 1 KiB > 256-byte slots
    ASSERT_TRUE(big.ok()) << big.status().to_string();
    EXPECT_EQ(pool->stats().dedicated, 1u);
    auto got = receive_tensor(s.consumer.get(), mapper);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_TRUE(matches(got->second, 7));
    // It counts as a slot: with it held, the producer has none.
    EXPECT_EQ(pool->acquire(16, 5ms).status().code(), StatusCode::kDeadlineExceeded);
    EXPECT_EQ(mapper.mapped_buffers(), 1u);
    release_through(s.consumer.get(), s.producer.get(), mapper, *pool, *big);
    EXPECT_EQ(mapper.mapped_buffers(), 0u) << "the consumer unmaps a dedicated buffer";
    EXPECT_EQ(pool->release(*big).code(), StatusCode::kInvalidArgument) << "freed, not pooled";
    auto small = pool->acquire(16, 0ms);
    ASSERT_TRUE(small.ok());
    EXPECT_NE(small->buffer, *big);
    EXPECT_EQ(pool->acquire(uint64_t{4} << 30, 0ms).status().code(),
              StatusCode::kResourceExhausted);
  }
  EXPECT_EQ(count_open_fds(), fds_before);
}

// A mapper holding buffer 1 (1024 bytes) of a one-slot pool, and that slot's descriptor.
struct MappedFixture {
  std::unique_ptr<TensorPool> pool = make_pool(1, 1024);
  TensorMapper mapper{"test"};
  json descriptor;
};

void map_one(MappedFixture& f) {
  auto slot = f.pool->acquire(64, 0ms);
  ASSERT_TRUE(slot.ok());
  auto pub = f.pool->publish(*slot, TensorDtype::kF32, {16});
  ASSERT_TRUE(pub.ok() && pub->announce);
  std::vector<UniqueFd> fds;
  fds.emplace_back(dup(pub->announce_fd));
  ASSERT_TRUE(f.mapper.add(*pub->announce, std::move(fds)).ok());
  f.descriptor = pub->descriptor;
}

TEST(TensorMapper, RefusesLyingDescriptors) {
  MappedFixture f;
  ASSERT_NO_FATAL_FAILURE(map_one(f));
  auto with = [&](const char* key, json v) {
    json d = f.descriptor;
    d[key] = std::move(v);
    return d;
  };
  const std::vector<std::pair<json, const char*>> lies = {
      {with("offset", 2048), "past the end"},
      {with("offset", UINT64_MAX - 3), "past the end"},  // offset + bytes wraps around
      {json{{"buffer", 1},
            {"offset", 0},
            {"bytes", 1028},
            {"dtype", "f32"},
            {"shape", json::array({257})}},
       "past the end"},
      {with("bytes", 60), "64 expected"},
      {with("shape", {4, 8}), "128 expected"},
      {with("dtype", "s16"), "32 expected"},
      {with("dtype", "f64"), "dtype"},
      {with("dtype", 5), "dtype"},
      {with("shape", {-1, 16}), "non-negative"},
      {with("shape", json::array({1.5})), "non-negative"},
      {with("shape", "16"), "shape"},
      {with("shape", json::array({1, 1, 1, 1, 1, 1, 1, 1, 16})), "rank 9"},
      {with("offset", 2), "multiple"},
      {with("buffer", 99), "never announced"},
      {with("bytes", -64), "non-negative"},
      {json::array({1, 2}), "not an object"},
  };
  for (const auto& [d, why] : lies) {
    auto v = f.mapper.view(d);
    ASSERT_FALSE(v.ok()) << d.dump();
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidFormat) << d.dump();
    EXPECT_NE(v.status().message().find(why), std::string::npos)
        << d.dump() << ": " << v.status().message();
  }
  EXPECT_EQ(f.mapper.held_buffers(), 0u) << "a refused descriptor holds nothing";
  auto ok = f.mapper.view(f.descriptor);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->bytes.size(), 64u);
  // The producer naming the buffer again before its release would overwrite a held tensor.
  auto again = f.mapper.view(f.descriptor);
  EXPECT_NE(again.status().message().find("before its release"), std::string::npos);
  EXPECT_TRUE(f.mapper.release(1).ok());
  EXPECT_EQ(f.mapper.release(1).status().code(), StatusCode::kInvalidArgument);
}

TEST(TensorMapper, RefusesBadAnnouncementsAndClosesTheirDescriptors) {
  const int fds_before = count_open_fds();
  {
    auto buf = ShmBuffer::create(4096, "announced");
    ASSERT_TRUE(buf.ok());
    auto fds_of = [&](int n) {
      std::vector<UniqueFd> v;
      for (int i = 0; i < n; ++i) v.emplace_back(dup(buf->fd()));
      return v;
    };
    const json good = {{"type", "announce"}, {"buffer", 3}, {"bytes", 4096}};
    TensorMapper mapper("test");
    EXPECT_FALSE(mapper.add(good, fds_of(0)).ok());
    EXPECT_FALSE(mapper.add(good, fds_of(2)).ok());
    EXPECT_FALSE(
        mapper.add({{"type", "announce"}, {"buffer", 3}, {"bytes", 8192}}, fds_of(1)).ok());
    EXPECT_FALSE(
        mapper.add({{"type", "announce"}, {"buffer", -3}, {"bytes", 4096}}, fds_of(1)).ok());
    EXPECT_FALSE(mapper.add({{"type", "other"}, {"buffer", 3}, {"bytes", 4096}}, fds_of(1)).ok());
    // A memfd its producer could still truncate under us.
    UniqueFd unsealed(memfd_create("unsealed", MFD_CLOEXEC));
    ASSERT_EQ(ftruncate(unsealed.get(), 4096), 0);
    std::vector<UniqueFd> one;
    one.emplace_back(std::move(unsealed));
    const Status st = mapper.add(good, std::move(one));
    EXPECT_NE(st.message().find("not a memfd sealed"), std::string::npos) << st.message();
    EXPECT_EQ(mapper.mapped_buffers(), 0u);
    ASSERT_TRUE(mapper.add(good, fds_of(1)).ok());
    EXPECT_FALSE(mapper.add(good, fds_of(1)).ok()) << "the same id twice";
    EXPECT_EQ(mapper.mapped_buffers(), 1u);
  }
  EXPECT_EQ(count_open_fds(), fds_before);
}

// ---- across a real child process ----

// The child is the consumer. It holds tensor 0 to the end, holds tensors 1 and 2 until the
// parent says "go" (so the producer stalls at its 3 slots), releases every later tensor at
// once, and finally reports what it received. Returns the child's exit code.
int child_consumer(int sock) {
  const int fds_at_start = count_open_fds();
  int received = 0, bad = 0;
  auto fail = [](int code, const std::string& why) {
    fprintf(stderr, "child consumer: %s\n", why.c_str());
    return code;
  };
  {
    TensorMapper mapper("child");
    std::optional<SharedTensor> first;
    std::vector<uint64_t> held;
    bool go = false;
    for (bool done = false; !done;) {
      auto m = receive_message_with_fds(sock, 30s);
      if (!m.ok()) return fail(10, m.status().to_string());
      const std::string type = m->msg["type"];
      if (type == "announce") {
        // The producer's buffer: this side can neither resize it nor write to it.
        const int fd = m->fds.size() == 1 ? m->fds[0].get() : -1;
        if (fd < 0 || ftruncate(fd, 0) == 0 || ftruncate(fd, 1 << 20) == 0)
          return fail(11, "resized a sealed buffer");
        if ((fcntl(fd, F_GET_SEALS) & F_SEAL_FUTURE_WRITE) &&
            mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) != MAP_FAILED)
          return fail(12, "mapped the producer's buffer writable");
        if (Status st = mapper.add(m->msg, std::move(m->fds)); !st.ok())
          return fail(13, st.to_string());
      } else if (type == "event") {
        auto t = mapper.view(m->msg["tensor"]);
        if (!t.ok()) return fail(14, t.status().to_string());
        const int seq = m->msg["seq"];
        bad += seq != received || !matches(*t, seq);
        ++received;
        if (seq == 0) {
          first = *t;
        } else if (!go) {
          held.push_back(t->buffer);
        } else if (auto r = mapper.release(t->buffer); !r.ok() || !send_message(sock, *r).ok()) {
          return fail(15, "release");
        }
      } else if (type == "go") {
        go = true;
        for (uint64_t b : held)
          if (auto r = mapper.release(b); !r.ok() || !send_message(sock, *r).ok())
            return fail(16, "release");
      } else if (type == "done") {
        if (!first) return fail(17, "no tensor 0");
        bad += !matches(*first, 0);  // untouched while the producer went on
        if (auto r = mapper.release(first->buffer); !r.ok() || !send_message(sock, *r).ok())
          return fail(17, "release");
        done = true;
      }
    }
  }
  const int fd_delta = count_open_fds() - fds_at_start;
  if (!send_message(sock,
                    {{"type", "bye"}, {"received", received}, {"bad", bad}, {"fd_delta", fd_delta}})
           .ok())
    return fail(18, "bye");
  return 0;
}

TEST(TensorPipe, ChildProcessReadsEveryTensorAndBackPressureStallsTheProducer) {
  constexpr int kTotal = 12;
  const int fds_before = count_open_fds();
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(sv[0]);
    int code = 99;
    try {
      code = child_consumer(sv[1]);
    } catch (...) {
      code = 98;
    }
    _exit(code);
  }
  close(sv[1]);
  // Reaped however the test ends; the socket closes first, so a waiting child exits.
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      int st;
      if (pid > 0) waitpid(pid, &st, 0);
    }
  } reaper{pid};
  UniqueFd sock(sv[0]);
  {
    auto pool = make_pool(3, 4096);
    ASSERT_TRUE(pool);
    // The parent is single-threaded: while every slot is held it reads the child's releases.
    const TensorPool::Pump pump = [&](std::chrono::milliseconds left) -> Status {
      ASSIGN_OR_RETURN(json m, receive_message(sock.get(), left));
      return pool->release(m);
    };
    for (int seq = 0; seq < 3; ++seq) ASSERT_TRUE(send_tensor(sock.get(), *pool, seq).ok());
    // The child holds all three and releases nothing until "go".
    auto stalled = send_tensor(sock.get(), *pool, 3, 100ms, pump);
    ASSERT_EQ(stalled.status().code(), StatusCode::kDeadlineExceeded)
        << stalled.status().to_string();
    EXPECT_EQ(pool->stats().stalls, 1u);
    ASSERT_TRUE(send_message(sock.get(), {{"type", "go"}}).ok());
    for (int seq = 3; seq < kTotal; ++seq) {
      auto b = send_tensor(sock.get(), *pool, seq, 30s, pump);
      ASSERT_TRUE(b.ok()) << "tensor " << seq << ": " << b.status().to_string();
    }
    ASSERT_TRUE(send_message(sock.get(), {{"type", "done"}}).ok());
    json bye;
    while (bye.is_null()) {
      auto m = receive_message(sock.get(), 30s);
      ASSERT_TRUE(m.ok()) << m.status().to_string();
      if ((*m)["type"] == "bye")
        bye = *m;
      else
        ASSERT_TRUE(pool->release(*m).ok());
    }
    EXPECT_EQ(bye["received"], kTotal);
    EXPECT_EQ(bye["bad"], 0);
    EXPECT_EQ(bye["fd_delta"], 0) << "the child leaked descriptors";
    const TensorPoolStats st = pool->stats();
    EXPECT_EQ(st.in_use, 0);
    EXPECT_EQ(st.high_water, 3);
    EXPECT_GE(st.stalls, 1u);
    EXPECT_EQ(st.published, static_cast<uint64_t>(kTotal));
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  reaper.pid = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  sock.reset();
  EXPECT_EQ(count_open_fds(), fds_before);
}

}  // namespace
}  // namespace edge::pipeline
