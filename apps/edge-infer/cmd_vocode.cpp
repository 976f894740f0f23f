// edge-infer vocode --vocoder VOC.gguf --codes 1,2,3 -o out.wav
//   [--window W --context C --lookahead L] [--scale llama|torch] [--f32 out.f32]
// Audio codes -> 24 kHz 16-bit mono WAV through the WavTokenizer decoder. --window > 0
// decodes as the streaming path does (windowed, see model/vocoder.h); 0 is exact.
// --f32 also writes the float samples (little-endian float32) for numeric comparisons.
// Prints the decode time (load excluded) and the real-time factor on stderr.
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
#include "model/vocoder.h"

namespace edge::cli {
namespace {

struct VocodeArgs {
  std::string vocoder, codes, out, f32, scale = "llama";
  int32_t threads = 0;
  VocoderStreamOptions stream;
};

int run_vocode(const VocodeArgs& a) {
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
  if (!a.f32.empty()) {
    std::ofstream f(a.f32, std::ios::binary);
    f.write(reinterpret_cast<const char*>(pcm->data()),
            static_cast<std::streamsize>(pcm->size() * sizeof(float)));
    if (!f) return report_error(Status::io_error(a.f32 + ": write failed"));
  }
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
  sub->add_option("--vocoder", a->vocoder, "wavtokenizer-dec GGUF")->required();
  sub->add_option("--codes", a->codes, "comma-separated codes, e.g. 1,2,3")->required();
  sub->add_option("-o,--output", a->out, "output WAV (16-bit mono)")->required();
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
