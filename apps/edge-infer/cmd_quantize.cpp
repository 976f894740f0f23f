// edge-infer quantize IN OUT --type w4a16|w4a8|w8|f16|mxfp4 [--group 32|64|128] [--asym]
// IN: a GGUF file (F32/F16/BF16, or GGUF-quantised) or a Hugging Face directory
// (config.json + safetensors + tokenizer.json). Writes a GGUF whose weights are already in
// our packed layout (loading it is a plain mmap), streamed a few panels at a time: the
// transient memory is a few MB, never a whole matrix. OUT is written as OUT.tmp and
// renamed only on success. A progress bar (tensors, bytes, ETA) is drawn when stderr is a
// terminal; nothing otherwise.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "convert/quantize_hf.h"
#include "quant/quantize_file.h"

namespace edge::cli {
namespace {

struct QuantizeArgs {
  std::string in, out, type = "w4a16", head = "same";
  QuantizeOptions o;
};

// Redraws at most 10 times a second, and once more at the end.
class ProgressBar {
 public:
  void operator()(const QuantizeProgressInfo& p) {
    const auto now = std::chrono::steady_clock::now();
    const bool last = p.tensors_done >= p.tensors_total;
    if (!last && now - drawn_ < std::chrono::milliseconds(100)) return;
    drawn_ = now;
    const double frac = p.bytes_total > 0 ? static_cast<double>(p.bytes_done) / p.bytes_total : 1.0;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const int width = 30, filled = static_cast<int>(frac * width);
    char eta[32] = "--:--";
    if (frac > 0.01) {
      const int s = static_cast<int>(elapsed * (1.0 - frac) / frac);
      std::snprintf(eta, sizeof(eta), "%d:%02d", s / 60, s % 60);
    }
    const bool gb = p.bytes_total >= 1000000000u;
    const double unit = gb ? 1e9 : 1e6;
    std::fprintf(stderr, "\r[%.*s%*s] %3d%%  %lld/%lld tensors  %.*f/%.*f %s  ETA %s ", filled,
                 "##############################", width - filled, "", static_cast<int>(frac * 100),
                 static_cast<long long>(p.tensors_done), static_cast<long long>(p.tensors_total),
                 gb ? 2 : 1, p.bytes_done / unit, gb ? 2 : 1, p.bytes_total / unit, gb ? "GB" : "MB", eta);
    if (last) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point drawn_{};
};

int run_quantize(QuantizeArgs& a) {
  auto t = quant_type_from_name(a.type);
  if (!t) return report_error(t.status());
  a.o.type = *t;
  auto head = head_quant_from_name(a.head);
  if (!head) return report_error(head.status());
  a.o.head = *head;
  const auto t0 = std::chrono::steady_clock::now();
  QuantizeProgress progress;
  if (isatty(STDERR_FILENO)) progress = ProgressBar();
  std::error_code ec;
  const bool dir = std::filesystem::is_directory(a.in, ec);
  Status s = dir ? quantize_hf_dir(a.in, a.out, a.o, progress) : quantize_gguf(a.in, a.out, a.o, progress);
  if (!s.ok()) return report_error(s);
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "edge-infer: wrote %s (%s) in %.1f s\n", a.out.c_str(), a.type.c_str(), sec);
  return 0;
}

}  // namespace

void register_quantize(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<QuantizeArgs>();
  CLI::App* sub = app.add_subcommand("quantize", "Write a pre-packed quantised GGUF");
  sub->add_option("input", a->in,
                  "F32/F16/BF16 (or GGUF-quantised) GGUF model, or a Hugging Face directory")
      ->required();
  sub->add_option("output", a->out, "output GGUF")->required();
  sub->add_option("--type", a->type, "w4a16 | w4a8 | w8 | f16 | mxfp4 (f16: convert only)")
      ->capture_default_str();
  sub->add_option("--group", a->o.group, "group size along the input dimension: 32, 64 or 128 (0: default)");
  sub->add_flag("--asym", a->o.asym, "asymmetric 4-bit (scale and min per group)");
  sub->add_flag("--repack", a->o.repack_blocks,
                "with --type f16: repack GGUF block types (Q4_0, Q4_K, MXFP4, ...) into packed "
                "cells instead of copying them; float weights stay as they are");
  sub->add_option("--output-type", a->head,
                  "output head (output.weight): same (as --type) | w6 | w8 (groups of 32)")
      ->capture_default_str();
  sub->add_option("-t,--threads", a->o.threads, "threads (default: all allowed cores)");
  sub->callback([a, &ctx] { ctx.exit_code = run_quantize(*a); });
}

}  // namespace edge::cli
