#include "formats/image.h"

#include <fmt/format.h>
#include <png.h>

#include <csetjmp>
#include <cstdio>
// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

namespace edge {

std::string sniff_image_format(std::span<const uint8_t> b) {
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (b.size() >= 8 && std::equal(kPng, kPng + 8, b.begin())) return "png";
  if (b.size() >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff) return "jpeg";
  return "";
}

namespace {

Status check_size(int64_t w, int64_t h, const ImageLimits& limits, const char* fmt_name) {
  if (w <= 0 || h <= 0)
    return Status::out_of_range(fmt::format("{}: empty image ({}x{})", fmt_name, w, h));
  if (w * h > limits.max_pixels)
    return Status::out_of_range(fmt::format("{}: {}x{} = {} pixels, more than the {} allowed",
                                            fmt_name, w, h, w * h, limits.max_pixels));
  return Status();
}

Expected<RgbImage> decode_png(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, bytes.data(), bytes.size()))
    return Status::invalid_format(fmt::format("PNG: {}", img.message));
  if (Status s = check_size(img.width, img.height, limits, "PNG"); !s.ok()) {
    png_image_free(&img);
    return s;
  }
  img.format = PNG_FORMAT_RGB;
  RgbImage out;
  out.width = img.width;
  out.height = img.height;
  out.rgb.resize(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, out.rgb.data(), 0, nullptr))
    return Status::invalid_format(fmt::format("PNG: {}", img.message));
  return out;
}

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {};
};

[[noreturn]] void jpeg_fail(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

// Warnings (level -1: premature end of data, corrupt data) are errors: the library would
// otherwise fill the rest of a truncated image with grey.
void jpeg_message(j_common_ptr cinfo, int level) {
  if (level < 0) jpeg_fail(cinfo);
}

// Everything the longjmp may skip lives in the caller: no destructors between setjmp and
// the library calls.
bool jpeg_decode_into(std::span<const uint8_t> bytes, const ImageLimits& limits,
                      jpeg_decompress_struct* c, JpegError* err, RgbImage* out,
                      Status* size_error) {
  if (setjmp(err->jump)) return false;
  jpeg_mem_src(c, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(c, TRUE);
  c->out_color_space = JCS_RGB;
  *size_error = check_size(c->image_width, c->image_height, limits, "JPEG");
  if (!size_error->ok()) return false;
  jpeg_start_decompress(c);
  out->width = c->output_width;
  out->height = c->output_height;
  out->rgb.resize(static_cast<size_t>(out->width * out->height * 3));
  while (c->output_scanline < c->output_height) {
    JSAMPROW row = out->rgb.data() + static_cast<size_t>(c->output_scanline) * out->width * 3;
    jpeg_read_scanlines(c, &row, 1);
  }
  jpeg_finish_decompress(c);
  return true;
}

Expected<RgbImage> decode_jpeg(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  jpeg_decompress_struct c{};
  JpegError err;
  c.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.emit_message = jpeg_message;
  jpeg_create_decompress(&c);
  RgbImage out;
  Status size_error;
  const bool ok = jpeg_decode_into(bytes, limits, &c, &err, &out, &size_error);
  jpeg_destroy_decompress(&c);
  if (!size_error.ok()) return size_error;
  if (!ok) return Status::invalid_format(fmt::format("JPEG: {}", err.message));
  return out;
}

}  // namespace

Expected<RgbImage> decode_image(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  const std::string f = sniff_image_format(bytes);
  if (f == "png") return decode_png(bytes, limits);
  if (f == "jpeg") return decode_jpeg(bytes, limits);
  return Status::unsupported("unsupported image format (PNG and JPEG are supported)");
}

}  // namespace edge
