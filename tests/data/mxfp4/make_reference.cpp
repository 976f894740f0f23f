// Writes MXFP4 reference blocks from GGML's quantize_row_mxfp4_ref and dequantize_row_mxfp4
// for a fixed set of inputs (README.md here: how it is built and run). Not part of the build.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

// The two GGML functions, declared here so the program links against either ik_llama.cpp's
// libggml or mainline ggml's ggml-quants.c (block_mxfp4 is 17 bytes: u8 e, u8 qs[16]).
struct block_mxfp4 {
  uint8_t e;
  uint8_t qs[16];
};
extern "C" void quantize_row_mxfp4_ref(const float* x, block_mxfp4* y, int64_t k);
extern "C" void dequantize_row_mxfp4(const block_mxfp4* x, float* y, int64_t k);

static uint64_t state = 0x243F6A8885A308D3ull;
static double uniform() {  // [0, 1)
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<double>(state >> 11) / 9007199254740992.0;
}
static float gauss() {
  const double u = uniform() + 1e-12, v = uniform();
  return static_cast<float>(std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v));
}

int main(int argc, char** argv) {
  std::vector<float> x;
  auto block = [&](auto f) {
    for (int j = 0; j < 32; ++j) x.push_back(f(j));
  };
  for (int b = 0; b < 16; ++b) {  // gaussian, scales 2^-20 .. 2^25
    const float s = std::ldexp(1.0f, -20 + 3 * b);
    block([&](int) { return gauss() * s; });
  }
  // ties: e = 127 (amax 6, d = 0.5), midpoints between neighbouring values, both signs
  const float mids[] = {6.0f,   0.25f,  0.75f,  1.25f,  1.75f, 2.5f,  3.5f,  5.0f,
                        -0.25f, -0.75f, -1.25f, -1.75f, -2.5f, -3.5f, -5.0f, 0.0f};
  block([&](int j) { return mids[j % 16]; });
  block([](int) { return 0.0f; });  // all zero
  block([](int j) { return std::nextafter(std::ldexp(1.0f, j % 8), 0.0f) * (j & 8 ? -1 : 1); });
  block([](int j) { return std::nextafter(8.0f, 0.0f) * (j == 3 ? 1.0f : 0.1f * j); });
  block([](int j) { return std::ldexp(1.0f, -120) * (1.0f + 0.05f * j); });    // tiny
  block([](int j) { return 3.0e38f * (j % 2 ? -1.0f : 1.0f) / (1.0f + j); });  // huge
  block([](int j) { return j == 5 ? 16.0f : 0.37f * (j - 16); });              // amax a power of 2
  block([](int j) { return j == 0 ? -1.9f : 0.11f * (j - 15); });              // clipping amax
  for (int b = 0; b < 16; ++b) {  // uniform, both signs
    const float a = std::ldexp(1.0f, b - 8);
    block([&](int) { return static_cast<float>(2.0 * uniform() - 1.0) * a; });
  }
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<block_mxfp4> q(n / 32);
  quantize_row_mxfp4_ref(x.data(), q.data(), n);
  std::vector<float> y(n);
  dequantize_row_mxfp4(q.data(), y.data(), n);
  std::printf("# MXFP4 reference: GGML quantize_row_mxfp4_ref / dequantize_row_mxfp4 (%s)\n",
              argc > 1 ? argv[1] : "?");
  std::printf(
      "# per block: x (32 float bit patterns), b (17 block bytes), y (32 float bit patterns)\n");
  for (int64_t b = 0; b < n / 32; ++b) {
    std::printf("x");
    for (int j = 0; j < 32; ++j) {
      uint32_t u;
      std::memcpy(&u, &x[b * 32 + j], 4);
      std::printf(" %08x", u);
    }
    std::printf("\nb");
    const uint8_t* p = reinterpret_cast<const uint8_t*>(&q[b]);
    for (int j = 0; j < 17; ++j) std::printf(" %02x", p[j]);
    std::printf("\ny");
    for (int j = 0; j < 32; ++j) {
      uint32_t u;
      std::memcpy(&u, &y[b * 32 + j], 4);
      std::printf(" %08x", u);
    }
    std::printf("\n");
  }
  return 0;
}
