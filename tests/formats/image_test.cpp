// Images in: PNG and JPEG decoding of untrusted bytes (round trips, every error class:
// unknown format, truncated or corrupt data, too many pixels), the resize against the
// independent numpy implementation in tests/data/image_resize (make_reference.py, with
// its command), and the mean/std normalisation.
#include "formats/image.h"

#include <gtest/gtest.h>
#include <png.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

namespace edge {
namespace {

RgbImage pattern(int64_t w, int64_t h) {
  RgbImage img;
  img.width = w;
  img.height = h;
  img.rgb.resize(static_cast<size_t>(w * h * 3));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t c = 0; c < 3; ++c)
        img.rgb[static_cast<size_t>((y * w + x) * 3 + c)] =
            static_cast<uint8_t>((x * 37 + y * 91 + c * 53 + x * y * 7) % 256);
  return img;
}

std::vector<uint8_t> encode_png(const uint8_t* px, int64_t w, int64_t h, uint32_t format) {
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  img.width = static_cast<uint32_t>(w);
  img.height = static_cast<uint32_t>(h);
  img.format = format;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&img, nullptr, &size, 0, px, 0, nullptr));
  std::vector<uint8_t> out(size);
  EXPECT_TRUE(png_image_write_to_memory(&img, out.data(), &size, 0, px, 0, nullptr));
  out.resize(size);
  return out;
}

std::vector<uint8_t> encode_jpeg(const RgbImage& img) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = static_cast<JDIMENSION>(img.width);
  c.image_height = static_cast<JDIMENSION>(img.height);
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 95, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(img.rgb.data()) + c.next_scanline * img.width * 3;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::vector<uint8_t> out(buf, buf + size);
  std::free(buf);
  return out;
}

RgbImage smooth(int64_t w, int64_t h) {  // JPEG keeps a smooth image close
  RgbImage img = pattern(w, h);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t c = 0; c < 3; ++c)
        img.rgb[static_cast<size_t>((y * w + x) * 3 + c)] =
            static_cast<uint8_t>(4 * x + 2 * y + 40 * c);
  return img;
}

TEST(Image, PngRoundTripsAndExpandsGreyAndAlpha) {
  const RgbImage src = pattern(13, 11);
  auto rgb = decode_image(encode_png(src.rgb.data(), 13, 11, PNG_FORMAT_RGB));
  ASSERT_TRUE(rgb.ok()) << rgb.status().to_string();
  EXPECT_EQ(rgb->width, 13);
  EXPECT_EQ(rgb->height, 11);
  EXPECT_EQ(rgb->rgb, src.rgb);
  std::vector<uint8_t> grey(13 * 11, 77);
  auto g = decode_image(encode_png(grey.data(), 13, 11, PNG_FORMAT_GRAY));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->rgb, std::vector<uint8_t>(13 * 11 * 3, 77));
  std::vector<uint8_t> rgba(4 * 4 * 4, 200);
  for (size_t i = 3; i < rgba.size(); i += 4) rgba[i] = 255;  // opaque: colour kept
  auto a = decode_image(encode_png(rgba.data(), 4, 4, PNG_FORMAT_RGBA));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->rgb, std::vector<uint8_t>(4 * 4 * 3, 200));
}

TEST(Image, JpegRoundTripsClosely) {
  const RgbImage src = smooth(32, 24);
  auto got = decode_image(encode_jpeg(src));
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->rgb.size(), src.rgb.size());
  int worst = 0;
  for (size_t i = 0; i < src.rgb.size(); ++i)
    worst = std::max(worst, std::abs(int(got->rgb[i]) - int(src.rgb[i])));
  EXPECT_LE(worst, 12);
}

TEST(Image, BadBytesAreRefusedByClass) {
  const RgbImage src = pattern(64, 48);
  const std::vector<uint8_t> png = encode_png(src.rgb.data(), 64, 48, PNG_FORMAT_RGB),
                             jpg = encode_jpeg(smooth(64, 48));
  // Unknown format.
  const std::vector<uint8_t> gif = {'G', 'I', 'F', '8', '9', 'a', 0, 0};
  EXPECT_EQ(decode_image(gif).status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(decode_image({}).status().code(), StatusCode::kUnsupported);
  // Truncated: half the file.
  for (const auto* bytes : {&png, &jpg}) {
    auto r = decode_image(std::span(*bytes).first(bytes->size() / 2));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidFormat) << r.status().to_string();
  }
  // Corrupt: the header kept, the data overwritten.
  std::vector<uint8_t> bad = png;
  for (size_t i = 60; i < bad.size() - 20; ++i) bad[i] = static_cast<uint8_t>(i * 13);
  EXPECT_EQ(decode_image(bad).status().code(), StatusCode::kInvalidFormat);
  // Too many pixels: refused from the header, before decoding.
  ImageLimits small;
  small.max_pixels = 1000;
  for (const auto* bytes : {&png, &jpg}) {
    auto r = decode_image(*bytes, small);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
    EXPECT_NE(r.status().message().find("3072 pixels"), std::string::npos)
        << r.status().to_string();
  }
}

TEST(Image, ResizeMatchesTheNumpyReference) {
  std::ifstream in(std::string(EDGE_SOURCE_DIR) + "/tests/data/image_resize/reference.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json ref = nlohmann::json::parse(in);
  const RgbImage src = pattern(13, 11);
  ASSERT_EQ(ref["cases"].size(), 6u);
  for (const auto& c : ref["cases"]) {
    const ResizeFilter f =
        c["filter"] == "bilinear" ? ResizeFilter::kBilinear : ResizeFilter::kBicubic;
    const RgbImage got = resize_image(src, c["width"], c["height"], f);
    const std::vector<int> want = c["rgb"];
    ASSERT_EQ(got.rgb.size(), want.size());
    int worst = 0;
    for (size_t i = 0; i < want.size(); ++i)
      worst = std::max(worst, std::abs(int(got.rgb[i]) - want[i]));
    EXPECT_LE(worst, 1) << c["filter"] << " " << c["width"] << "x"
                        << c["height"];  // rounding of .5 only
  }
}

// mtmd's padding: the image keeps its aspect, is centred (offsets rounded down) and the
// rest is the pad colour; a square image is only resized, one already at size untouched.
TEST(Image, LetterboxKeepsTheAspectAndCentres) {
  const std::array<uint8_t, 3> pad = {122, 116, 104};
  const RgbImage wide = pattern(32, 16);
  const RgbImage lb = letterbox_image(wide, 32, 32, ResizeFilter::kBilinear, pad);
  ASSERT_EQ(lb.width, 32);
  ASSERT_EQ(lb.height, 32);
  for (int64_t y = 0; y < 32; ++y)
    for (int64_t x = 0; x < 32; ++x)
      for (int64_t c = 0; c < 3; ++c) {
        const bool inside = y >= 8 && y < 24;
        const uint8_t want = inside ? wide.rgb[static_cast<size_t>(((y - 8) * 32 + x) * 3 + c)]
                                    : pad[static_cast<size_t>(c)];
        ASSERT_EQ(lb.rgb[static_cast<size_t>((y * 32 + x) * 3 + c)], want) << x << "," << y;
      }
  // Tall, odd margin: 10 x 30 into 12 x 12 is scaled to 4 x 12 at x = 4.
  const RgbImage tall = letterbox_image(pattern(10, 30), 12, 12, ResizeFilter::kBilinear, pad);
  const RgbImage inner = resize_image(pattern(10, 30), 4, 12, ResizeFilter::kBilinear);
  for (int64_t y = 0; y < 12; ++y)
    for (int64_t x = 0; x < 12; ++x) {
      const uint8_t got = tall.rgb[static_cast<size_t>((y * 12 + x) * 3)];
      const bool inside = x >= 4 && x < 8;
      EXPECT_EQ(got, inside ? inner.rgb[static_cast<size_t>((y * 4 + x - 4) * 3)] : pad[0])
          << x << "," << y;
    }
  const RgbImage square = letterbox_image(pattern(20, 20), 12, 12, ResizeFilter::kBilinear, pad);
  EXPECT_EQ(square.rgb, resize_image(pattern(20, 20), 12, 12, ResizeFilter::kBilinear).rgb);
  EXPECT_EQ(letterbox_image(wide, 32, 16, ResizeFilter::kBilinear, pad).rgb, wide.rgb);
}

TEST(Image, NormalisesPerChannelIntoPlanes) {
  RgbImage img;
  img.width = 2;
  img.height = 1;
  img.rgb = {0, 255, 51, 255, 0, 102};
  const float mean[3] = {0.5f, 0.5f, 0.0f}, std[3] = {0.5f, 0.25f, 0.2f};
  const std::vector<float> px = normalize_image(img, mean, std);
  const std::vector<float> want = {-1, 1, 2, -2, 1, 2};
  ASSERT_EQ(px.size(), want.size());
  for (size_t i = 0; i < px.size(); ++i) EXPECT_NEAR(px[i], want[i], 1e-5) << i;
}

}  // namespace
}  // namespace edge
