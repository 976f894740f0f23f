// The API key check: correct, and constant-time (no early exit at the first differing byte,
// a length difference does not skip the comparison).
#include "server/auth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>

namespace edge::server {
namespace {

TEST(ApiKey, ConstantTimeEqualsIsEquality) {
  EXPECT_TRUE(constant_time_equals("", ""));
  EXPECT_TRUE(constant_time_equals("sekret", "sekret"));
  EXPECT_FALSE(constant_time_equals("sekret", "sekreT"));
  EXPECT_FALSE(constant_time_equals("sekret", "Sekret"));
  EXPECT_FALSE(constant_time_equals("sekret", "sekre"));
  EXPECT_FALSE(constant_time_equals("sekret", "sekret!"));
  EXPECT_FALSE(constant_time_equals("sekret", ""));
  EXPECT_FALSE(constant_time_equals("", "x"));
  EXPECT_FALSE(constant_time_equals(std::string("a\0b", 3), std::string("a\0c", 3)));
  EXPECT_TRUE(constant_time_equals(std::string("a\0b", 3), std::string("a\0b", 3)));
  // A candidate that is the key followed by NULs must not pass (its tail reads as 0 bytes).
  EXPECT_FALSE(constant_time_equals("ab", std::string("ab\0", 3)));
}

TEST(ApiKey, BearerHeader) {
  EXPECT_TRUE(bearer_token_matches("Bearer k1", "k1"));
  EXPECT_FALSE(bearer_token_matches("Bearer k2", "k1"));
  EXPECT_FALSE(bearer_token_matches("bearer k1", "k1"));
  EXPECT_FALSE(bearer_token_matches("k1", "k1"));
  EXPECT_FALSE(bearer_token_matches("", "k1"));
  EXPECT_FALSE(bearer_token_matches("Bearer ", "k1"));
}

// Best of `reps` timings of `n` comparisons, in seconds.
template <typename F>
double best_time(F&& f, int reps = 11, int n = 8) {
  double best = 1e9;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

TEST(ApiKey, TimeDoesNotDependOnWhereTheCandidateDiffers) {
  // With a 1 MiB key an early-exit compare (memcmp, ==) answers a first-byte mismatch or a
  // length mismatch ~1000x faster than a last-byte one; a constant-time compare reads the
  // whole key each time. A 4x margin keeps this robust on a busy machine.
  const std::string key(1u << 20, 'k');
  std::string last = key, first = key;
  last.back() = 'x';
  first.front() = 'x';
  const std::string short_one = "k";
  volatile bool sink = false;
  const double t_last = best_time([&] { sink = sink ^ constant_time_equals(key, last); });
  const double t_first = best_time([&] { sink = sink ^ constant_time_equals(key, first); });
  const double t_short = best_time([&] { sink = sink ^ constant_time_equals(key, short_one); });
  EXPECT_GT(t_first, t_last / 4) << "a first-byte mismatch returned early";
  EXPECT_GT(t_short, t_last / 4) << "a length mismatch returned early";
}

}  // namespace
}  // namespace edge::server
