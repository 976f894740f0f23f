#include "server/auth.h"

namespace edge::server {

bool constant_time_equals(std::string_view expected, std::string_view candidate) {
  // Every byte of `expected` is compared against the candidate's byte at that index (0 past
  // its end); the difference accumulates without branching on content.
  volatile unsigned char diff = expected.size() == candidate.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char c = i < candidate.size() ? static_cast<unsigned char>(candidate[i]) : 0;
    diff = diff | (static_cast<unsigned char>(expected[i]) ^ c);
  }
  return diff == 0;
}

bool bearer_token_matches(std::string_view authorization, const std::string& key) {
  constexpr std::string_view kScheme = "Bearer ";
  const bool scheme_ok = authorization.substr(0, kScheme.size()) == kScheme;
  const std::string_view token = scheme_ok ? authorization.substr(kScheme.size()) : std::string_view();
  return constant_time_equals(key, token) && scheme_ok;
}

}  // namespace edge::server
