// edge-infer vocode --vocoder VOC.gguf --codes 1,2,3 -o out.wav
//   [--window W --context C --lookahead L] [--scale llama|torch] [--f32 out.f32]
// Audio codes -> 24 kHz 16-bit mono WAV through the WavTokenizer decoder. --window > 0
// decodes as the streaming path does (windowed, see model/vocoder.h); 0 is exact.
// --f32 also writes the float samples (little-endian float32) for numeric comparisons.
// Prints the decode time (load excluded) and the real-time factor on stderr.
//
// edge-infer vocode --codec DIR (--codes 1,2,3 | --frames N) [--chunk C] [-r R] [-o out.wav]
// The same through the Qwen3-TTS 12 Hz codec decoder (model/qwen3_tts_codec_decoder.h):
// codes are whole frames of n_quantizers; --frames N decodes N frames of deterministic
// pseudo-random codes (a timing run). Each of R runs decodes the utterance in chunks of C
// frames; the decode seconds of every run, their median and the real-time factor
// (decode seconds / audio seconds) are printed on stderr.
//
// Also `make-model --arch wavtokenizer-dec` (make_vocoder below): a random-weight vocoder.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "commands.h"
#include "convert/random_model.h"
#include "convert/random_vocoder.h"
#include "formats/wav.h"
#include "model/qwen3_tts_codec_decoder.h"
#include "model/vocoder.h"

namespace edge::cli {
namespace {

std::string fmt_seconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", s);
  return b;
}

struct VocodeArgs {
  std::string vocoder, codec, codes, out, f32, scale = "llama";
  int32_t threads = 0;
  int64_t frames = 0, chunk = 25;
  int32_t repeats = 1;
  VocoderStreamOptions stream;
};

Status write_f32(const std::string& path, const std::vector<float>& pcm) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(pcm.data()),
          static_cast<std::streamsize>(pcm.size() * sizeof(float)));
  return f ? Status() : Status::io_error(path + ": write failed");
}

// --frames N: codes [N][n_q] from a fixed linear congruential sequence (the same every run).
std::vector<int32_t> timing_codes(int64_t frames, int64_t n_q, int64_t codebook_size) {
  std::vector<int32_t> codes(static_cast<size_t>(frames * n_q));
  uint32_t x = 12345;
  for (int32_t& c : codes) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(codebook_size));
  }
  return codes;
}

int run_vocode_codec(const VocodeArgs& a) {
  Qwen3TtsCodecOptions o;
  o.n_threads = a.threads;
  auto c = Qwen3TtsCodec::load(a.codec, o);
  if (!c) return report_error(c.status());
  std::vector<int32_t> codes;
  if (a.frames > 0) {
    codes = timing_codes(a.frames, (*c)->n_quantizers(), (*c)->hparams().codebook_size);
  } else {
    auto ids = parse_id_list(a.codes);
    if (!ids) return report_error(ids.status());
    codes = std::move(*ids);
  }
  std::vector<double> secs;
  std::vector<float> pcm;
  for (int32_t r = 0; r < std::max(a.repeats, 1); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    auto out = (*c)->decode(codes, a.chunk);
    secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (!out) return report_error(out.status());
    pcm = std::move(*out);
  }
  if (!a.out.empty()) RETURN_CODE_IF_ERROR(write_wav16(a.out, pcm, (*c)->sample_rate()));
  if (!a.f32.empty()) RETURN_CODE_IF_ERROR(write_f32(a.f32, pcm));
  const double audio_s = static_cast<double>(pcm.size()) / (*c)->sample_rate();
  std::string runs;
  for (double s : secs) runs += fmt_seconds(s) + " ";
  std::sort(secs.begin(), secs.end());
  const double med = secs[secs.size() / 2];
  std::fprintf(stderr,
               "edge-infer: %zu frames -> %.2f s of audio at %d Hz, chunks of %lld frames\n"
               "edge-infer: decode s per run: %s\n"
               "edge-infer: median decode %.3f s (real-time factor %.3f)\n",
               codes.size() / static_cast<size_t>((*c)->n_quantizers()), audio_s,
               (*c)->sample_rate(), static_cast<long long>(a.chunk), runs.c_str(), med,
               audio_s > 0 ? med / audio_s : 0.0);
  return 0;
}

int run_vocode(const VocodeArgs& a) {
  if (!a.codec.empty()) return run_vocode_codec(a);
  if (a.vocoder.empty() || a.codes.empty() || a.out.empty())
    return report_error(
        Status::invalid_argument("--vocoder, --codes and -o are required without --codec"));
  auto codes = parse_id_list(a.codes);
  if (!codes) return report_error(codes.status());
  VocoderOptions vo;
  vo.n_threads = a.threads;
  if (a.scale == "torch") {
    vo.scale = IstftScale::kTorch;
  } else if (a.scale != "llama") {
    return report_error(Status::invalid_argument("--scale must be llama or torch"));
  }
  auto v = Vocoder::load(a.vocoder, vo);
  if (!v) return report_error(v.status());
  const auto t0 = std::chrono::steady_clock::now();
  auto pcm = a.stream.window > 0 ? (*v)->decode_windowed(*codes, a.stream) : (*v)->decode(*codes);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!pcm) return report_error(pcm.status());
  RETURN_CODE_IF_ERROR(write_wav16(a.out, *pcm, (*v)->sample_rate()));
  if (!a.f32.empty()) RETURN_CODE_IF_ERROR(write_f32(a.f32, *pcm));
  const double audio_s = static_cast<double>(pcm->size()) / (*v)->sample_rate();
  std::fprintf(stderr,
               "edge-infer: %zu codes -> %zu samples at %d Hz -> %s\n"
               "edge-infer: decode %.1f ms for %.2f s of audio (real-time factor %.3f)\n",
               codes->size(), pcm->size(), (*v)->sample_rate(), a.out.c_str(), ms, audio_s,
               audio_s > 0 ? ms / 1000.0 / audio_s : 0.0);
  return 0;
}

}  // namespace

int make_vocoder(const RandomModelOptions& m, const std::string& out) {
  // make-model's flags mapped onto the vocoder: --dim is the pos-net/ConvNeXt width,
  // --layers the ConvNeXt blocks, --ffn its MLP width (0: 3 * dim, WavTokenizer's ratio),
  // --vocab the code count; the feature width is 2/3 of dim (512 of 768) and the groups
  // the largest power of two up to 32 dividing dim.
  RandomVocoderOptions o;
  o.n_embd = m.n_embd;
  o.n_convnext = m.n_layer;
  o.n_ff = m.n_ff > 0 ? m.n_ff : 3 * m.n_embd;
  o.n_vocab = m.n_vocab;
  o.n_features = std::max(1, m.n_embd * 2 / 3);
  o.n_groups = 32;
  while (o.n_groups > 1 && m.n_embd % o.n_groups) o.n_groups /= 2;
  o.dtype = m.dtype;
  o.seed = m.seed;
  RETURN_CODE_IF_ERROR(write_random_vocoder(o, out));
  std::fprintf(stderr, "edge-infer: wrote wavtokenizer-dec vocoder (random weights) to %s\n",
               out.c_str());
  return 0;
}

void register_vocode(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<VocodeArgs>();
  CLI::App* sub = app.add_subcommand("vocode", "Decode audio codes to a WAV with a vocoder");
  sub->add_option("--vocoder", a->vocoder, "wavtokenizer-dec GGUF");
  sub->add_option("--codec", a->codec, "Qwen3-TTS 12 Hz tokenizer directory (instead)");
  sub->add_option("--codes", a->codes, "comma-separated codes, e.g. 1,2,3");
  sub->add_option("--frames", a->frames, "--codec: decode N frames of pseudo-random codes");
  sub->add_option("--chunk", a->chunk, "--codec: frames per forward chunk")->capture_default_str();
  sub->add_option("-r,--repeats", a->repeats, "--codec: timed decodes")->capture_default_str();
  sub->add_option("-o,--output", a->out, "output WAV (16-bit mono)");
  sub->add_option("--f32", a->f32, "also write the float samples here");
  sub->add_option("--scale", a->scale, "ISTFT scaling: llama (llama.cpp's tts) | torch")
      ->capture_default_str();
  sub->add_option("--window", a->stream.window, "codes per window (0: exact)")
      ->capture_default_str();
  sub->add_option("--context", a->stream.context, "codes of left context per window");
  sub->add_option("--lookahead", a->stream.lookahead, "codes of lookahead per window");
  sub->add_option("-t,--threads", a->threads, "matmul threads (0: all the process may use)");
  sub->callback([a, &ctx] { ctx.exit_code = run_vocode(*a); });
}

}  // namespace edge::cli
