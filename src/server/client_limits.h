// Per-client admission: at most N requests in flight and at most T tokens of unfinished
// work per client (a request's tokens: (prompt + max_tokens) x n, the most it can hold in
// the KV cache). A client is the API key when the server checks one, else the remote
// address. Over a limit: 429 with a Retry-After. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "server/api_error.h"

namespace edge::server {

struct ClientLimits {
  int32_t max_requests = 0;       // 0: unlimited
  int64_t max_queued_tokens = 0;  // 0: unlimited
};

class ClientLimiter {
 public:
  // Holds one admitted request's share until destroyed (or release()).
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& o) noexcept { *this = std::move(o); }
    Lease& operator=(Lease&& o) noexcept;
    ~Lease() { release(); }
    void release();

   private:
    friend class ClientLimiter;
    ClientLimiter* owner_ = nullptr;
    std::string client_;
    int64_t tokens_ = 0;
  };

  explicit ClientLimiter(ClientLimits limits = {}) : limits_(limits) {}
  void set_limits(ClientLimits limits);
  // Admits a request of `tokens` for `client` into `lease`, or says why not: 429 (retry
  // later) over a limit, 400 when the request alone exceeds the token limit.
  std::optional<ApiError> admit(const std::string& client, int64_t tokens, Lease& lease);
  // In flight for a client now (tests and metrics).
  int32_t requests(const std::string& client) const;

 private:
  struct Usage {
    int32_t requests = 0;
    int64_t tokens = 0;
  };
  void give_back(const std::string& client, int64_t tokens);

  mutable std::mutex mu_;
  ClientLimits limits_;
  std::map<std::string, Usage> usage_;  // only clients with something in flight
};

}  // namespace edge::server
