#include "pipeline/worker/worker_protocol.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace edge::pipeline {

namespace {

using Clock = std::chrono::steady_clock;

// Descriptors that arrived while reading one message.
struct FdSink {
  std::vector<UniqueFd> fds;
  bool truncated = false;  // the kernel dropped (and closed) some: more than we had room for
};

// One recvmsg that also takes the descriptors riding on the bytes it reads.
ssize_t recv_with_fds(int fd, char* out, size_t n, FdSink& sink) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxMessageFds)];
  iovec iov{out, n};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = sizeof(control);
  const ssize_t k = ::recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
  if (k < 0) return k;
  for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c != nullptr; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int v;
      std::memcpy(&v, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      sink.fds.emplace_back(v);
    }
  }
  if (mh.msg_flags & MSG_CTRUNC) sink.truncated = true;
  return k;
}

// Reads exactly n bytes before `deadline`; with a sink, also the descriptors sent with them.
Status read_exact(int fd, char* out, size_t n, Clock::time_point deadline, bool started,
                  FdSink* sink = nullptr) {
  size_t got = 0;
  while (got < n) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(std::max<long long>(0, left)));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      // Half a message and then silence is the peer's fault; nothing at all is a timeout.
      return got == 0 && !started ? Status::deadline_exceeded("no message")
                                  : Status::invalid_format("a message stopped half way");
    }
    const ssize_t k =
        sink ? recv_with_fds(fd, out + got, n - got, *sink) : ::recv(fd, out + got, n - got, 0);
    if (k == 0) return Status::unavailable("the peer closed the connection");
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::unavailable(std::string("recv: ") + std::strerror(errno));
    }
    got += static_cast<size_t>(k);
  }
  return Status();
}

// A message as it goes on the wire: 4-byte little-endian length, then the JSON body.
Expected<std::string> frame_message(const nlohmann::json& msg) {
  const std::string body = msg.dump();
  if (body.size() > kMaxWorkerMessage) return Status::invalid_argument("message too large");
  const uint32_t n = static_cast<uint32_t>(body.size());
  const unsigned char len[4] = {static_cast<unsigned char>(n), static_cast<unsigned char>(n >> 8),
                                static_cast<unsigned char>(n >> 16),
                                static_cast<unsigned char>(n >> 24)};
  std::string frame(reinterpret_cast<const char*>(len), 4);
  frame += body;
  return frame;
}

Status send_rest(int fd, const std::string& frame, size_t sent) {
  while (sent < frame.size()) {
    const ssize_t k = ::send(fd, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return Status::unavailable(std::string("send: ") + std::strerror(errno));
    sent += static_cast<size_t>(k);
  }
  return Status();
}

// One whole message; descriptors that come with it go to `sink` (or, without one, are
// closed by the kernel).
Expected<nlohmann::json> receive_frame(int fd, std::chrono::milliseconds timeout, FdSink* sink) {
  const auto deadline = Clock::now() + timeout;
  unsigned char len[4];
  RETURN_IF_ERROR(read_exact(fd, reinterpret_cast<char*>(len), 4, deadline, false, sink));
  const uint32_t n = len[0] | (len[1] << 8) | (len[2] << 16) | (uint32_t{len[3]} << 24);
  if (n > kMaxWorkerMessage) return Status::invalid_format(fmt::format("a message of {} bytes", n));
  std::string body(n, '\0');
  // The rest of a message that has started arrives promptly: allow a few seconds beyond.
  RETURN_IF_ERROR(read_exact(
      fd, body.data(), n, std::max(deadline, Clock::now() + std::chrono::seconds(5)), true, sink));
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("type"))
    return Status::invalid_format("a message that is not a JSON object with a type");
  return j;
}

}  // namespace

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Status send_message(int fd, const nlohmann::json& msg) {
  ASSIGN_OR_RETURN(const std::string frame, frame_message(msg));
  return send_rest(fd, frame, 0);
}

Expected<nlohmann::json> receive_message(int fd, std::chrono::milliseconds timeout) {
  return receive_frame(fd, timeout, nullptr);
}

Status send_message_with_fds(int fd, const nlohmann::json& msg, std::span<const int> fds) {
  if (fds.size() > kMaxMessageFds)
    return Status::invalid_argument(
        fmt::format("{} descriptors in one message (at most {})", fds.size(), kMaxMessageFds));
  ASSIGN_OR_RETURN(const std::string frame, frame_message(msg));
  if (fds.empty()) return send_rest(fd, frame, 0);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxMessageFds)] = {};
  iovec iov{const_cast<char*>(frame.data()), frame.size()};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
  cmsghdr* c = CMSG_FIRSTHDR(&mh);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  // The descriptors go with whatever part of the frame this first call sends (at least its
  // first byte); the rest follows as plain bytes.
  ssize_t k;
  do {
    k = ::sendmsg(fd, &mh, MSG_NOSIGNAL);
  } while (k < 0 && errno == EINTR);
  if (k <= 0) return Status::unavailable(std::string("sendmsg: ") + std::strerror(errno));
  return send_rest(fd, frame, static_cast<size_t>(k));
}

Expected<MessageWithFds> receive_message_with_fds(int fd, std::chrono::milliseconds timeout,
                                                  size_t max_fds) {
  FdSink sink;
  auto j = receive_frame(fd, timeout, &sink);
  if (!j.ok()) return j.status();  // whatever descriptors came are closed with `sink`
  if (sink.truncated || sink.fds.size() > max_fds)
    return Status::invalid_format(fmt::format("a message with {}{} descriptors (at most {})",
                                              sink.truncated ? "more than " : "", sink.fds.size(),
                                              std::min(max_fds, kMaxMessageFds)));
  return MessageWithFds{std::move(*j), std::move(sink.fds)};
}

}  // namespace edge::pipeline
