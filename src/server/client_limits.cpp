#include "server/client_limits.h"

namespace edge::server {
namespace {
constexpr int kRetryAfterSeconds = 1;

ApiError too_many(std::string message) {
  ApiError e;
  e.http_status = 429;
  e.type = "rate_limit_error";
  e.code = "rate_limit_exceeded";
  e.message = std::move(message);
  e.retry_after_s = kRetryAfterSeconds;
  return e;
}
}  // namespace

ClientLimiter::Lease& ClientLimiter::Lease::operator=(Lease&& o) noexcept {
  if (this == &o) return *this;
  release();
  owner_ = o.owner_;
  client_ = std::move(o.client_);
  tokens_ = o.tokens_;
  o.owner_ = nullptr;
  return *this;
}

void ClientLimiter::Lease::release() {
  if (!owner_) return;
  owner_->give_back(client_, tokens_);
  owner_ = nullptr;
}

void ClientLimiter::set_limits(ClientLimits limits) {
  std::lock_guard<std::mutex> l(mu_);
  limits_ = limits;
}

std::optional<ApiError> ClientLimiter::admit(const std::string& client, int64_t tokens, Lease& lease) {
  lease.release();
  std::lock_guard<std::mutex> l(mu_);
  if (limits_.max_queued_tokens > 0 && tokens > limits_.max_queued_tokens)
    return ApiError::bad_request("this request needs " + std::to_string(tokens) +
                                     " tokens ((prompt + max_tokens) x n), more than the per-client limit of " +
                                     std::to_string(limits_.max_queued_tokens),
                                 "max_tokens", "client_token_limit");
  Usage& u = usage_[client];
  if (limits_.max_requests > 0 && u.requests >= limits_.max_requests) {
    if (u.requests == 0) usage_.erase(client);
    return too_many("too many concurrent requests from this client (limit " + std::to_string(limits_.max_requests) +
                    ")");
  }
  if (limits_.max_queued_tokens > 0 && u.tokens + tokens > limits_.max_queued_tokens) {
    if (u.requests == 0) usage_.erase(client);
    return too_many("this client has " + std::to_string(u.tokens) + " tokens in flight; " + std::to_string(tokens) +
                    " more would pass the per-client limit of " + std::to_string(limits_.max_queued_tokens));
  }
  ++u.requests;
  u.tokens += tokens;
  lease.owner_ = this;
  lease.client_ = client;
  lease.tokens_ = tokens;
  return std::nullopt;
}

int32_t ClientLimiter::requests(const std::string& client) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = usage_.find(client);
  return it == usage_.end() ? 0 : it->second.requests;
}

void ClientLimiter::give_back(const std::string& client, int64_t tokens) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = usage_.find(client);
  if (it == usage_.end()) return;
  it->second.requests -= 1;
  it->second.tokens -= tokens;
  if (it->second.requests <= 0) usage_.erase(it);
}

}  // namespace edge::server
