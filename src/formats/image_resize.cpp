// Resampling and normalisation of decoded images (formats/image.h).
#include <algorithm>
#include <cmath>

#include "formats/image.h"

namespace edge {

namespace {

double filter_value(ResizeFilter f, double x) {
  x = std::fabs(x);
  if (f == ResizeFilter::kBilinear) return x < 1.0 ? 1.0 - x : 0.0;
  constexpr double a = -0.5;  // Keys cubic
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

// For each output index: the first input index and the normalised weights.
struct Taps {
  std::vector<int64_t> first;
  std::vector<std::vector<double>> weights;
};

Taps taps(int64_t in, int64_t out, ResizeFilter f) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double fscale = std::max(scale, 1.0);
  const double support = (f == ResizeFilter::kBilinear ? 1.0 : 2.0) * fscale;
  Taps t;
  t.first.resize(static_cast<size_t>(out));
  t.weights.resize(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const double center = (static_cast<double>(i) + 0.5) * scale;
    const int64_t lo =
        std::max<int64_t>(0, static_cast<int64_t>(std::floor(center - support + 0.5)));
    const int64_t hi =
        std::min<int64_t>(in, static_cast<int64_t>(std::floor(center + support + 0.5)));
    std::vector<double>& w = t.weights[static_cast<size_t>(i)];
    double sum = 0;
    for (int64_t j = lo; j < hi; ++j) {
      w.push_back(filter_value(f, (static_cast<double>(j) - center + 0.5) / fscale));
      sum += w.back();
    }
    if (sum != 0)
      for (double& v : w) v /= sum;
    t.first[static_cast<size_t>(i)] = lo;
  }
  return t;
}

}  // namespace

RgbImage resize_image(const RgbImage& in, int64_t w, int64_t h, ResizeFilter filter) {
  if (in.width == w && in.height == h) return in;
  const Taps tx = taps(in.width, w, filter), ty = taps(in.height, h, filter);
  // Rows first: [in.height][w][3] in double.
  std::vector<double> mid(static_cast<size_t>(in.height * w * 3), 0.0);
  for (int64_t y = 0; y < in.height; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const std::vector<double>& wt = tx.weights[static_cast<size_t>(x)];
      const int64_t x0 = tx.first[static_cast<size_t>(x)];
      double* dst = mid.data() + (y * w + x) * 3;
      for (size_t k = 0; k < wt.size(); ++k) {
        const uint8_t* src = in.rgb.data() + (y * in.width + x0 + static_cast<int64_t>(k)) * 3;
        for (int c = 0; c < 3; ++c) dst[c] += wt[k] * src[c];
      }
    }
  RgbImage out;
  out.width = w;
  out.height = h;
  out.rgb.resize(static_cast<size_t>(w * h * 3));
  for (int64_t y = 0; y < h; ++y) {
    const std::vector<double>& wt = ty.weights[static_cast<size_t>(y)];
    const int64_t y0 = ty.first[static_cast<size_t>(y)];
    for (int64_t x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        double v = 0;
        for (size_t k = 0; k < wt.size(); ++k)
          v += wt[k] * mid[static_cast<size_t>(((y0 + static_cast<int64_t>(k)) * w + x) * 3 + c)];
        out.rgb[static_cast<size_t>((y * w + x) * 3 + c)] =
            static_cast<uint8_t>(std::clamp(std::lround(v), 0l, 255l));
      }
  }
  return out;
}

RgbImage letterbox_image(const RgbImage& in, int64_t w, int64_t h, ResizeFilter filter,
                         const std::array<uint8_t, 3>& pad) {
  if (in.width == w && in.height == h) return in;
  // float, as mtmd computes it, so that the rounded-up sides are the same.
  const float scale = std::min(static_cast<float>(w) / static_cast<float>(in.width),
                               static_cast<float>(h) / static_cast<float>(in.height));
  const int64_t sw =
      std::min<int64_t>(static_cast<int64_t>(std::ceil(static_cast<float>(in.width) * scale)), w);
  const int64_t sh =
      std::min<int64_t>(static_cast<int64_t>(std::ceil(static_cast<float>(in.height) * scale)), h);
  const RgbImage sized =
      resize_image(in, std::max<int64_t>(sw, 1), std::max<int64_t>(sh, 1), filter);
  RgbImage out;
  out.width = w;
  out.height = h;
  out.rgb.resize(static_cast<size_t>(w * h * 3));
  for (size_t i = 0; i < out.rgb.size(); i += 3)
    std::copy(pad.begin(), pad.end(), out.rgb.begin() + i);
  const int64_t ox = (w - sized.width) / 2, oy = (h - sized.height) / 2;
  for (int64_t y = 0; y < sized.height; ++y)
    std::copy_n(sized.rgb.begin() + y * sized.width * 3, sized.width * 3,
                out.rgb.begin() + ((oy + y) * w + ox) * 3);
  return out;
}

std::vector<float> normalize_image(const RgbImage& img, const float mean[3], const float std[3]) {
  const int64_t n = img.width * img.height;
  std::vector<float> out(static_cast<size_t>(3 * n));
  for (int64_t i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c)
      out[static_cast<size_t>(c * n + i)] =
          (img.rgb[static_cast<size_t>(i * 3 + c)] / 255.0f - mean[c]) / std[c];
  return out;
}

}  // namespace edge
