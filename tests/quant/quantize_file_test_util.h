// Shared by the quantize_file tests: deterministic weight-like values.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace edge::test {

// n values ~ N(0, 0.02^2) (the scale of trained weights), deterministic in seed.
inline std::vector<float> gaussian(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 0.02f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace edge::test
