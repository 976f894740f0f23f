// edge-infer quantize IN OUT --type w4a16|w4a8|w8 [--group 64|128] [--asym]
// Writes a GGUF whose weights are already in our packed layout (loading it is a plain
// mmap). Works in panels of 16 rows: the transient memory is a few MB, never a whole
// expanded matrix. A progress bar is drawn when stderr is a terminal.
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "commands.h"
#include "quant/quantize_file.h"

namespace edge::cli {
namespace {

struct QuantizeArgs {
  std::string in, out, type = "w4a16";
  QuantizeOptions o;
};

void draw_progress(int64_t done, int64_t total) {
  static int last = -1;
  int pct = total > 0 ? static_cast<int>(done * 100 / total) : 100;
  if (pct == last) return;
  last = pct;
  const int width = 40, filled = pct * width / 100;
  std::fprintf(stderr, "\r[%.*s%*s] %3d%%", filled, "########################################", width - filled, "",
               pct);
  if (done >= total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

int run_quantize(QuantizeArgs& a) {
  auto t = quant_type_from_name(a.type);
  if (!t) return report_error(t.status());
  a.o.type = *t;
  auto t0 = std::chrono::steady_clock::now();
  QuantizeProgress progress = isatty(STDERR_FILENO) ? QuantizeProgress(draw_progress) : nullptr;
  Status s = quantize_gguf(a.in, a.out, a.o, progress);
  if (!s.ok()) return report_error(s);
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "edge-infer: wrote %s (%s) in %.1f s\n", a.out.c_str(), a.type.c_str(), sec);
  return 0;
}

}  // namespace

void register_quantize(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<QuantizeArgs>();
  CLI::App* sub = app.add_subcommand("quantize", "Write a pre-packed quantised GGUF");
  sub->add_option("input", a->in, "F32/F16/BF16 (or GGUF-quantised) GGUF model")->required();
  sub->add_option("output", a->out, "output GGUF")->required();
  sub->add_option("--type", a->type, "w4a16 | w4a8 | w8")->capture_default_str();
  sub->add_option("--group", a->o.group, "group size along the input dimension: 32, 64 or 128 (0: default)");
  sub->add_flag("--asym", a->o.asym, "asymmetric 4-bit (scale and min per group)");
  sub->add_option("-t,--threads", a->o.threads, "threads (default: all allowed cores)");
  sub->callback([a, &ctx] { ctx.exit_code = run_quantize(*a); });
}

}  // namespace edge::cli
