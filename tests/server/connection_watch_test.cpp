// Finding a connection's socket by its two ends (what cpp-httplib tells a handler) and
// noticing that its peer hung up.
#include "server/connection_watch.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/client_limits.h"
#include "server/lifecycle.h"

namespace edge::server {
namespace {

struct Connection {
  int listener = -1, client = -1, server = -1;
  ~Connection() {
    for (int fd : {listener, client, server})
      if (fd >= 0) close(fd);
  }
};

int port_of(int fd, bool peer) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  if ((peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
            : getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len)) != 0)
    return -1;
  return ntohs(a.sin_port);
}

void connect_loopback(Connection& c) {
  c.listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(c.listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(c.listener, 4), 0);
  addr.sin_port = htons(static_cast<uint16_t>(port_of(c.listener, false)));
  c.client = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(c.client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  c.server = accept(c.listener, nullptr, nullptr);
  ASSERT_GE(c.server, 0);
}

TEST(ConnectionWatch, FindsTheServerSideSocketAndSeesTheHangUp) {
  Connection c;
  connect_loopback(c);
  const ConnectionEnds ends{"127.0.0.1", "127.0.0.1", port_of(c.server, false), port_of(c.server, true)};
  // Both ends of the connection live in this process: the server side is the one whose
  // local port is the listener's.
  EXPECT_EQ(find_connection_fd(ends), c.server);
  const ConnectionEnds client_side{"127.0.0.1", "127.0.0.1", port_of(c.client, false), port_of(c.client, true)};
  EXPECT_EQ(find_connection_fd(client_side), c.client);
  EXPECT_EQ(find_connection_fd({"127.0.0.1", "127.0.0.1", ends.local_port, ends.remote_port + 1}), -1);
  EXPECT_EQ(find_connection_fd({"10.0.0.1", "127.0.0.1", ends.local_port, ends.remote_port}), -1);

  ConnectionWatch watch(ends, std::chrono::milliseconds(0));
  ASSERT_TRUE(watch.found());
  EXPECT_FALSE(peer_hung_up(c.server));
  ASSERT_EQ(write(c.client, "GET", 3), 3);  // unread data is not a hang-up
  EXPECT_FALSE(watch.client_gone());
  close(c.client);
  c.client = -1;
  EXPECT_TRUE(peer_hung_up(c.server));
  EXPECT_TRUE(watch.client_gone());
}

TEST(ConnectionWatch, UnknownConnectionNeverReportsGone) {
  ConnectionWatch watch({"127.0.0.1", "127.0.0.1", 1, 1}, std::chrono::milliseconds(0));
  EXPECT_FALSE(watch.found());
  EXPECT_FALSE(watch.client_gone());
}

TEST(ClientLimiter, CountsRequestsAndTokensPerClient) {
  ClientLimiter lim({2, 100});
  ClientLimiter::Lease a1, a2, a3, b1;
  EXPECT_FALSE(lim.admit("a", 40, a1));
  EXPECT_FALSE(lim.admit("a", 40, a2));
  auto e = lim.admit("a", 10, a3);  // third request
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 429);
  EXPECT_EQ(e->retry_after_s, 1);
  EXPECT_FALSE(lim.admit("b", 100, b1));  // another client has its own share
  a2.release();
  EXPECT_EQ(lim.requests("a"), 1);
  auto t = lim.admit("a", 61, a3);  // 40 + 61 > 100 tokens
  ASSERT_TRUE(t);
  EXPECT_EQ(t->http_status, 429);
  EXPECT_FALSE(lim.admit("a", 60, a3));
  auto alone = lim.admit("c", 101, a2);  // can never fit: 400, not 429
  ASSERT_TRUE(alone);
  EXPECT_EQ(alone->http_status, 400);
  { ClientLimiter::Lease moved = std::move(a3); }  // a moved lease is given back once
  EXPECT_EQ(lim.requests("a"), 1);
  a1 = ClientLimiter::Lease();
  EXPECT_EQ(lim.requests("a"), 0);
  ClientLimiter unlimited;
  ClientLimiter::Lease u[50];
  for (auto& l : u) EXPECT_FALSE(unlimited.admit("a", 1 << 30, l));
}

TEST(Lifecycle, LoadingReadyDrainingAndTheDeadline) {
  Lifecycle l;
  EXPECT_EQ(l.state(), Lifecycle::State::kLoading);
  l.set_ready();
  EXPECT_EQ(l.state(), Lifecycle::State::kReady);
  EXPECT_FALSE(l.past_drain_deadline());
  l.begin_drain(std::chrono::milliseconds(50));
  EXPECT_EQ(l.state(), Lifecycle::State::kDraining);
  l.begin_drain(std::chrono::hours(1));  // the first deadline holds
  l.set_ready();                         // no way back from draining
  EXPECT_EQ(l.state(), Lifecycle::State::kDraining);
  EXPECT_FALSE(l.past_drain_deadline());
  usleep(80 * 1000);
  EXPECT_TRUE(l.past_drain_deadline());
}

}  // namespace
}  // namespace edge::server
