// One HTTP/1.1 request on a raw socket, for clients that must decide themselves when to
// read and when to hang up (the probes; the server tests): a small receive buffer (rcvbuf
// > 0) keeps a reader that does not read from hiding a whole response in socket buffers.
#pragma once

#include <string>

namespace edge {

// Connects to host:port, sends the request (Content-Type: application/json, Connection:
// close, `headers` as "Name: value\r\n" lines) and returns the socket; -1 on failure.
int raw_http_request(const std::string& host, const std::string& port, const std::string& method,
                     const std::string& path, const std::string& body,
                     const std::string& headers = "", int rcvbuf = 0);
// Everything until the peer closes; closes the socket.
std::string read_to_end(int fd);

// A raw HTTP/1.1 response split up: the status code (0 when there is no status line), the
// body (de-chunked when the transfer is chunked) and whether it was complete (a chunked
// body ended with its zero-length chunk; a plain one had all its Content-Length bytes).
struct RawResponse {
  int status = 0;
  std::string body;
  bool complete = false;
};
RawResponse parse_raw_response(const std::string& raw);

}  // namespace edge
