// Notices that the client of a non-streaming request has gone. cpp-httplib 0.11 hands a
// handler no socket and no "connection closed" query, but its Request carries both ends'
// addresses: the kernel's TCP table (/proc/self/net/tcp, tcp6) gives the socket inode of
// that connection and /proc/self/fd the descriptor that is that inode (stable while the
// handler runs: httplib closes it only after the handler returns). No other descriptor
// is touched. A hang-up (FIN or reset) is then seen with poll(POLLRDHUP).
#pragma once

#include <chrono>
#include <string>

namespace edge::server {

struct ConnectionEnds {
  std::string local_addr, remote_addr;  // numeric, as httplib formats them
  int local_port = -1, remote_port = -1;
};

// The descriptor of this process's TCP socket with exactly these ends; -1 if none.
int find_connection_fd(const ConnectionEnds& ends);

// Ends reading on every accepted connection of the listener on `local_port` (shutdown
// SHUT_RD): an idle keep-alive connection sees end-of-file and closes at once, a response
// being written is unaffected. How a drained server lets go of idle clients. Returns how
// many sockets it shut.
int shutdown_reads_of_accepted(int local_port);

// True when the peer of connected socket `fd` has closed or reset the connection.
bool peer_hung_up(int fd);

// find_connection_fd once, then peer_hung_up at most every `interval` (a cheap check to
// call from a waiting loop). Never reports a hang-up when the socket was not found.
class ConnectionWatch {
 public:
  explicit ConnectionWatch(const ConnectionEnds& ends,
                           std::chrono::milliseconds interval = std::chrono::milliseconds(50));
  bool client_gone();
  bool found() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point next_check_;
  bool gone_ = false;
};

}  // namespace edge::server
