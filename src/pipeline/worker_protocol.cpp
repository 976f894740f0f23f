#include "pipeline/worker_protocol.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace edge::pipeline {

namespace {

using Clock = std::chrono::steady_clock;

// Reads exactly n bytes before `deadline`.
Status read_exact(int fd, char* out, size_t n, Clock::time_point deadline, bool started) {
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
    const ssize_t k = ::recv(fd, out + got, n - got, 0);
    if (k == 0) return Status::unavailable("the peer closed the connection");
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::unavailable(std::string("recv: ") + std::strerror(errno));
    }
    got += static_cast<size_t>(k);
  }
  return Status();
}

}  // namespace

Status send_message(int fd, const nlohmann::json& msg) {
  const std::string body = msg.dump();
  if (body.size() > kMaxWorkerMessage) return Status::invalid_argument("message too large");
  const uint32_t n = static_cast<uint32_t>(body.size());
  const unsigned char len[4] = {static_cast<unsigned char>(n), static_cast<unsigned char>(n >> 8),
                                static_cast<unsigned char>(n >> 16),
                                static_cast<unsigned char>(n >> 24)};
  std::string frame(reinterpret_cast<const char*>(len), 4);
  frame += body;
  size_t sent = 0;
  while (sent < frame.size()) {
    const ssize_t k = ::send(fd, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return Status::unavailable(std::string("send: ") + std::strerror(errno));
    sent += static_cast<size_t>(k);
  }
  return Status();
}

Expected<nlohmann::json> receive_message(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  unsigned char len[4];
  RETURN_IF_ERROR(read_exact(fd, reinterpret_cast<char*>(len), 4, deadline, false));
  const uint32_t n = len[0] | (len[1] << 8) | (len[2] << 16) | (uint32_t{len[3]} << 24);
  if (n > kMaxWorkerMessage) return Status::invalid_format(fmt::format("a message of {} bytes", n));
  std::string body(n, '\0');
  // The rest of a message that has started arrives promptly: allow a few seconds beyond.
  RETURN_IF_ERROR(read_exact(fd, body.data(), n,
                             std::max(deadline, Clock::now() + std::chrono::seconds(5)), true));
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("type"))
    return Status::invalid_format("a message that is not a JSON object with a type");
  return j;
}

}  // namespace edge::pipeline
