#include "harness/raw_http.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

namespace edge {

int raw_http_request(const std::string& host, const std::string& port, const std::string& method,
                     const std::string& path, const std::string& body, const std::string& headers,
                     int rcvbuf) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) return -1;
  const int fd = socket(res->ai_family, SOCK_STREAM, 0);
  if (fd < 0) {
    freeaddrinfo(res);
    return -1;
  }
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  const bool connected = connect(fd, res->ai_addr, res->ai_addrlen) == 0;
  freeaddrinfo(res);
  const std::string req = method + " " + path + " HTTP/1.1\r\nHost: " + host +
                          "\r\nContent-Type: application/json\r\nConnection: close\r\n" + headers +
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  if (!connected || write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string read_to_end(int fd) {
  std::string got;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) got.append(buf, static_cast<size_t>(n));
  close(fd);
  return got;
}

}  // namespace edge
