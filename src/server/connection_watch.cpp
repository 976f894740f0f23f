#include "server/connection_watch.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace edge::server {
namespace {

// One row of /proc/net/tcp or tcp6: both ends' ports, the state and the socket's inode.
struct TcpRow {
  int local_port = -1, remote_port = -1;
  int state = 0;  // 1 = ESTABLISHED, 10 = LISTEN (include/net/tcp_states.h)
  unsigned long inode = 0;
  std::string local_hex, remote_hex;  // address in the kernel's hex form
};

std::vector<TcpRow> tcp_rows() {
  std::vector<TcpRow> rows;
  for (const char* path : {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout;
      TcpRow r;
      if (!(ls >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >>
            r.inode))
        continue;
      const size_t lc = local.rfind(':'), rc = remote.rfind(':');
      if (lc == std::string::npos || rc == std::string::npos) continue;
      r.local_hex = local.substr(0, lc), r.remote_hex = remote.substr(0, rc);
      r.local_port = static_cast<int>(std::strtol(local.c_str() + lc + 1, nullptr, 16));
      r.remote_port = static_cast<int>(std::strtol(remote.c_str() + rc + 1, nullptr, 16));
      r.state = static_cast<int>(std::strtol(state.c_str(), nullptr, 16));
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

// The kernel's hex form of a numeric IPv4 address ("127.0.0.1" -> "0100007F"), or of the
// IPv4-mapped IPv6 form; "" for anything else (then only the ports are compared).
std::string kernel_hex(const std::string& ip, bool v6) {
  in_addr a{};
  std::string v4 = ip.rfind("::ffff:", 0) == 0 ? ip.substr(7) : ip;
  if (inet_pton(AF_INET, v4.c_str(), &a) != 1) return "";
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08X",
                a.s_addr);  // s_addr is in network order; /proc prints host words
  return v6 ? std::string("0000000000000000FFFF0000") + hex : hex;
}

bool address_matches(const std::string& row_hex, const std::string& ip) {
  const std::string want = kernel_hex(ip, row_hex.size() == 32);
  return want.empty() || want == row_hex;
}

// The descriptors of this process that are the sockets with these inodes, found by the
// names of /proc/self/fd's links ("socket:[INODE]"): no call touches a descriptor that
// another thread may be closing (fstat or getsockname on foreign descriptors would race
// with their close).
std::vector<int> fds_of_inodes(const std::vector<unsigned long>& inodes) {
  std::vector<int> fds;
  if (inodes.empty()) return fds;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return fds;
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    char link[64] = {};
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = readlink(path.c_str(), link, sizeof link - 1);
    unsigned long ino = 0;
    if (n <= 0 || std::sscanf(link, "socket:[%lu]", &ino) != 1) continue;
    if (std::find(inodes.begin(), inodes.end(), ino) != inodes.end())
      fds.push_back(static_cast<int>(fd));
  }
  closedir(dir);
  return fds;
}

}  // namespace

int find_connection_fd(const ConnectionEnds& ends) {
  if (ends.local_port <= 0 || ends.remote_port <= 0) return -1;
  std::vector<unsigned long> inodes;
  for (const TcpRow& r : tcp_rows())
    if (r.local_port == ends.local_port && r.remote_port == ends.remote_port && r.inode != 0 &&
        address_matches(r.local_hex, ends.local_addr) &&
        address_matches(r.remote_hex, ends.remote_addr))
      inodes.push_back(r.inode);
  const std::vector<int> fds = fds_of_inodes(inodes);
  // Client and server in one process (tests) have a socket for each end; only the server's
  // has these local/remote ports the right way round, and that is the row matched above.
  return fds.size() == 1 ? fds[0] : -1;
}

int shutdown_reads_of_accepted(int local_port) {
  std::vector<unsigned long> inodes;
  for (const TcpRow& r : tcp_rows())
    if (r.local_port == local_port && r.state == 1 && r.remote_port > 0 && r.inode != 0)
      inodes.push_back(r.inode);
  int n = 0;
  for (int fd : fds_of_inodes(inodes))
    if (shutdown(fd, SHUT_RD) == 0) ++n;
  return n;
}

bool peer_hung_up(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

ConnectionWatch::ConnectionWatch(const ConnectionEnds& ends, std::chrono::milliseconds interval)
    : fd_(find_connection_fd(ends)),
      interval_(interval),
      next_check_(std::chrono::steady_clock::now() + interval) {}

bool ConnectionWatch::client_gone() {
  if (fd_ < 0 || gone_) return gone_;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_check_) return false;
  next_check_ = now + interval_;
  gone_ = peer_hung_up(fd_);
  return gone_;
}

}  // namespace edge::server
