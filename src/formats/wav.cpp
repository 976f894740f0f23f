#include "formats/wav.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

namespace edge {

namespace {

void put_u32(std::vector<uint8_t>& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u16(std::vector<uint8_t>& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v));
  b.push_back(static_cast<uint8_t>(v >> 8));
}
void put_tag(std::vector<uint8_t>& b, const char* tag) {
  b.insert(b.end(), tag, tag + 4);
}
uint32_t get_u32(const uint8_t* p) {
  return p[0] | p[1] << 8 | p[2] << 16 | uint32_t{p[3]} << 24;
}
uint16_t get_u16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | p[1] << 8);
}

}  // namespace

std::vector<uint8_t> encode_wav16(const float* pcm, int64_t n_samples, int32_t sample_rate,
                                  int32_t channels) {
  const uint32_t data_bytes = static_cast<uint32_t>(n_samples * 2);
  std::vector<uint8_t> b;
  b.reserve(44 + data_bytes);
  put_tag(b, "RIFF");
  put_u32(b, 36 + data_bytes);
  put_tag(b, "WAVE");
  put_tag(b, "fmt ");
  put_u32(b, 16);  // PCM fmt chunk
  put_u16(b, 1);   // WAVE_FORMAT_PCM
  put_u16(b, static_cast<uint16_t>(channels));
  put_u32(b, static_cast<uint32_t>(sample_rate));
  put_u32(b, static_cast<uint32_t>(sample_rate * channels * 2));  // bytes per second
  put_u16(b, static_cast<uint16_t>(channels * 2));                // block align
  put_u16(b, 16);
  put_tag(b, "data");
  put_u32(b, data_bytes);
  for (int64_t i = 0; i < n_samples; ++i) {
    const float x = std::clamp(pcm[i], -1.0f, 1.0f);
    put_u16(b, static_cast<uint16_t>(static_cast<int16_t>(std::lround(x * 32767.0f))));
  }
  return b;
}

Status write_wav16(const std::string& path, const std::vector<float>& pcm, int32_t sample_rate) {
  const std::vector<uint8_t> b =
      encode_wav16(pcm.data(), static_cast<int64_t>(pcm.size()), sample_rate);
  std::ofstream f(path, std::ios::binary);
  if (!f) return Status::io_error(path + ": cannot open for writing");
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  if (!f) return Status::io_error(path + ": write failed");
  return Status();
}

Expected<WavInfo> decode_wav16(const uint8_t* d, uint64_t size) {
  if (size < 12 || std::memcmp(d, "RIFF", 4) || std::memcmp(d + 8, "WAVE", 4))
    return Status::invalid_format("not a RIFF/WAVE image");
  WavInfo w;
  bool have_fmt = false;
  for (uint64_t off = 12; off + 8 <= size;) {
    const uint32_t len = get_u32(d + off + 4);
    const uint8_t* body = d + off + 8;
    if (len > size - off - 8) return Status::invalid_format("WAV chunk runs past the end");
    if (!std::memcmp(d + off, "fmt ", 4)) {
      if (len < 16 || get_u16(body) != 1) return Status::invalid_format("WAV: not PCM");
      w.channels = get_u16(body + 2);
      w.sample_rate = static_cast<int32_t>(get_u32(body + 4));
      w.bits = get_u16(body + 14);
      if (w.bits != 16) return Status::invalid_format("WAV: not 16-bit");
      have_fmt = true;
    } else if (!std::memcmp(d + off, "data", 4)) {
      if (!have_fmt) return Status::invalid_format("WAV: data before fmt");
      w.samples.resize(len / 2);
      for (uint32_t i = 0; i < len / 2; ++i)
        w.samples[i] = static_cast<int16_t>(get_u16(body + 2 * i));
      return w;
    }
    off += 8 + len + (len & 1);  // chunks are word-aligned
  }
  return Status::invalid_format("WAV: no data chunk");
}

}  // namespace edge
