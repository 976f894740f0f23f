// API-key checks that do not leak the key through timing: the comparison reads every byte
// of the expected value whatever the candidate is (no early exit at the first difference,
// and a length difference does not skip the content comparison).
#pragma once

#include <string>
#include <string_view>

namespace edge::server {

// Equal iff same length and same bytes; time depends only on expected.size().
bool constant_time_equals(std::string_view expected, std::string_view candidate);

// True when `authorization` (the header's value) is "Bearer <key>".
bool bearer_token_matches(std::string_view authorization, const std::string& key);

}  // namespace edge::server
