#include "harness/raw_http.h"

#include <netdb.h>
#include <sys/socket.h>
#include <strings.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

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

namespace {

// "<hex>\r\n<data>\r\n" ... "0\r\n\r\n" from `p` on; complete when the zero chunk came.
bool dechunk(const std::string& raw, size_t p, std::string* body) {
  while (p < raw.size()) {
    const size_t eol = raw.find("\r\n", p);
    if (eol == std::string::npos) return false;
    const size_t len = std::strtoul(raw.substr(p, eol - p).c_str(), nullptr, 16);
    if (len == 0) return true;
    if (eol + 2 + len > raw.size()) return false;
    body->append(raw, eol + 2, len);
    p = eol + 2 + len + 2;
  }
  return false;
}

// The value of header `name` (case-insensitive) in the head, "" when absent.
std::string header_value(const std::string& head, const char* name) {
  const size_t n = std::strlen(name);
  for (size_t p = head.find("\r\n"); p != std::string::npos; p = head.find("\r\n", p + 2)) {
    if (head.size() >= p + 2 + n + 1 && strncasecmp(head.c_str() + p + 2, name, n) == 0 &&
        head[p + 2 + n] == ':') {
      const size_t v = head.find_first_not_of(' ', p + 3 + n);
      const size_t e = head.find("\r\n", v);
      return head.substr(v, e == std::string::npos ? std::string::npos : e - v);
    }
  }
  return "";
}

}  // namespace

RawResponse parse_raw_response(const std::string& raw) {
  RawResponse r;
  const size_t head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos) return r;
  r.status = std::atoi(raw.c_str() + raw.find(' ') + 1);
  const std::string head = raw.substr(0, head_end);
  const size_t body_at = head_end + 4;
  if (strcasecmp(header_value(head, "Transfer-Encoding").c_str(), "chunked") == 0) {
    r.complete = dechunk(raw, body_at, &r.body);
    return r;
  }
  r.body = raw.substr(body_at);
  const std::string length = header_value(head, "Content-Length");
  r.complete = length.empty() || r.body.size() == std::strtoul(length.c_str(), nullptr, 10);
  return r;
}

}  // namespace edge
