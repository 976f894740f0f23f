#include "server/connection_watch.h"

#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <array>
#include <cstdlib>

namespace edge::server {
namespace {

// Numeric host and port of a socket address (as httplib's get_ip_and_port).
bool ip_and_port(const sockaddr_storage& addr, socklen_t len, std::string& ip, int& port) {
  if (addr.ss_family == AF_INET) {
    port = ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    port = ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  } else {
    return false;
  }
  std::array<char, NI_MAXHOST> host{};
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host.data(), static_cast<socklen_t>(host.size()),
                  nullptr, 0, NI_NUMERICHOST) != 0)
    return false;
  ip = host.data();
  return true;
}

bool end_matches(int fd, bool peer, const std::string& want_ip, int want_port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  if ((peer ? getpeername(fd, sa, &len) : getsockname(fd, sa, &len)) != 0) return false;
  std::string ip;
  int port = -1;
  return ip_and_port(addr, len, ip, port) && port == want_port && ip == want_ip;
}

// Calls f(fd) for each socket descriptor of this process until f returns true; that fd
// (or -1).
template <typename F>
int find_socket(F&& f) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (f(static_cast<int>(fd))) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return found;
}

}  // namespace

int find_connection_fd(const ConnectionEnds& ends) {
  if (ends.local_port <= 0 || ends.remote_port <= 0) return -1;
  return find_socket([&](int fd) {
    return end_matches(fd, /*peer=*/false, ends.local_addr, ends.local_port) &&
           end_matches(fd, /*peer=*/true, ends.remote_addr, ends.remote_port);
  });
}

int shutdown_reads_of_accepted(int local_port) {
  int n = 0;
  find_socket([&](int fd) {
    sockaddr_storage local{}, peer{};
    socklen_t llen = sizeof(local), plen = sizeof(peer);
    std::string ip;
    int port = -1;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) != 0 || !ip_and_port(local, llen, ip, port) ||
        port != local_port || getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) != 0)
      return false;  // another port, or the listening socket (no peer)
    if (shutdown(fd, SHUT_RD) == 0) ++n;
    return false;
  });
  return n;
}

bool peer_hung_up(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

ConnectionWatch::ConnectionWatch(const ConnectionEnds& ends, std::chrono::milliseconds interval)
    : fd_(find_connection_fd(ends)), interval_(interval), next_check_(std::chrono::steady_clock::now() + interval) {}

bool ConnectionWatch::client_gone() {
  if (fd_ < 0 || gone_) return gone_;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_check_) return false;
  next_check_ = now + interval_;
  gone_ = peer_hung_up(fd_);
  return gone_;
}

}  // namespace edge::server
