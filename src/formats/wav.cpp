#include "formats/wav.h"

#include <fmt/format.h>

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

namespace {

// A chunk tag for an error message (JSON-safe: bytes outside printable ASCII become '?').
std::string printable_tag(const uint8_t* p) {
  std::string t(4, '?');
  for (int i = 0; i < 4; ++i)
    if (p[i] >= 0x20 && p[i] < 0x7f) t[i] = static_cast<char>(p[i]);
  return t;
}

// The fmt chunk and the first data chunk after it (the walk stops there, so trailing
// chunks are never read).
struct WavChunks {
  const uint8_t* fmt = nullptr;
  uint32_t fmt_len = 0;
  const uint8_t* data = nullptr;
  uint32_t data_len = 0;
};

Expected<WavChunks> find_wav_chunks(const uint8_t* d, uint64_t size) {
  if (size < 12 || std::memcmp(d, "RIFF", 4) || std::memcmp(d + 8, "WAVE", 4))
    return Status::invalid_format("not a WAV file (no RIFF/WAVE header)");
  WavChunks c;
  for (uint64_t off = 12; off + 8 <= size;) {
    const uint32_t len = get_u32(d + off + 4);
    const uint8_t* body = d + off + 8;
    if (len > size - off - 8)
      return Status::invalid_format(
          fmt::format("WAV: '{}' chunk of {} bytes runs past the end ({} left): truncated file",
                      printable_tag(d + off), len, size - off - 8));
    if (!std::memcmp(d + off, "fmt ", 4)) {
      c.fmt = body;
      c.fmt_len = len;
    } else if (!std::memcmp(d + off, "data", 4)) {
      if (!c.fmt) return Status::invalid_format("WAV: data chunk before the fmt chunk");
      c.data = body;
      c.data_len = len;
      return c;
    }
    off += 8 + uint64_t{len} + (len & 1);  // chunks are word-aligned
  }
  return Status::invalid_format(c.fmt ? "WAV: no data chunk" : "WAV: no fmt chunk");
}

}  // namespace

Expected<WavInfo> decode_wav16(const uint8_t* d, uint64_t size) {
  auto c = find_wav_chunks(d, size);
  if (!c) return c.status();
  if (c->fmt_len < 16 || get_u16(c->fmt) != 1) return Status::invalid_format("WAV: not PCM");
  WavInfo w;
  w.channels = get_u16(c->fmt + 2);
  w.sample_rate = static_cast<int32_t>(get_u32(c->fmt + 4));
  w.bits = get_u16(c->fmt + 14);
  if (w.bits != 16) return Status::invalid_format("WAV: not 16-bit");
  w.samples.resize(c->data_len / 2);
  for (uint32_t i = 0; i < c->data_len / 2; ++i)
    w.samples[i] = static_cast<int16_t>(get_u16(c->data + 2 * i));
  return w;
}

namespace {

constexpr uint16_t kFormatPcm = 1, kFormatFloat = 3, kFormatExtensible = 0xFFFE;

struct FmtChunk {
  uint16_t format = 0;  // kFormatPcm | kFormatFloat after unwrapping EXTENSIBLE
  int32_t channels = 0, sample_rate = 0, bits = 0;
};

Expected<FmtChunk> parse_fmt(const uint8_t* body, uint32_t len) {
  if (len < 16) return Status::invalid_format(fmt::format("WAV: fmt chunk of {} bytes", len));
  FmtChunk f;
  f.format = get_u16(body);
  f.channels = get_u16(body + 2);
  f.sample_rate = static_cast<int32_t>(std::min<uint32_t>(get_u32(body + 4), 1u << 30));
  f.bits = get_u16(body + 14);
  // EXTENSIBLE: cbSize (22) and the sub-format GUID, whose first two bytes are the tag.
  if (f.format == kFormatExtensible) {
    if (len < 40) return Status::invalid_format("WAV: WAVE_FORMAT_EXTENSIBLE fmt chunk too short");
    f.format = get_u16(body + 24);
  }
  if (f.format != kFormatPcm && f.format != kFormatFloat)
    return Status::unsupported(
        fmt::format("WAV: sample format tag {} (only PCM 1 and IEEE float 3)", f.format));
  if (f.format == kFormatPcm && f.bits != 16)
    return Status::unsupported(fmt::format("WAV: {}-bit integer PCM (only 16-bit)", f.bits));
  if (f.format == kFormatFloat && f.bits != 32)
    return Status::unsupported(fmt::format("WAV: {}-bit float (only 32-bit)", f.bits));
  if (f.channels < 1 || f.channels > 64)
    return Status::invalid_format(fmt::format("WAV: {} channels", f.channels));
  if (f.sample_rate < 1000 || f.sample_rate > 768000)
    return Status::invalid_format(fmt::format("WAV: sample rate {} Hz", f.sample_rate));
  return f;
}

// Interleaved frames -> mono by averaging the channels.
PcmMono to_mono(const FmtChunk& f, const uint8_t* data, uint64_t n_frames) {
  PcmMono m;
  m.sample_rate = f.sample_rate;
  m.samples.resize(n_frames);
  const int bytes = f.bits / 8;
  const float inv_ch = 1.0f / static_cast<float>(f.channels);
  for (uint64_t i = 0; i < n_frames; ++i) {
    float sum = 0.0f;
    for (int c = 0; c < f.channels; ++c) {
      const uint8_t* p = data + (i * f.channels + c) * bytes;
      if (f.format == kFormatPcm) {
        sum += static_cast<float>(static_cast<int16_t>(get_u16(p))) / 32768.0f;
      } else {
        const uint32_t u = get_u32(p);
        float v;
        std::memcpy(&v, &u, 4);
        sum += std::isfinite(v) ? v : 0.0f;
      }
    }
    m.samples[i] = sum * inv_ch;
  }
  return m;
}

}  // namespace

Expected<PcmMono> decode_wav_mono(const uint8_t* d, uint64_t size) {
  auto c = find_wav_chunks(d, size);
  if (!c) return c.status();
  auto f = parse_fmt(c->fmt, c->fmt_len);
  if (!f) return f.status();
  const uint64_t frame_bytes = static_cast<uint64_t>(f->channels) * (f->bits / 8);
  if (c->data_len < frame_bytes) return Status::invalid_format("WAV: no samples");
  return to_mono(*f, c->data, c->data_len / frame_bytes);  // a trailing partial frame is dropped
}

}  // namespace edge
