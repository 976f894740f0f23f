// edge-infer grid FILE [--out R.json] [--plots DIR] [--allow-noisy] [--lock-file PATH]
// Runs a grid file (src/harness/grid.h): arms in rotated passes after a per-core
// pre-flight, under the host lock; prints medians, spread and verdicts; writes the full
// result (every run with its provenance) as JSON and the SVG charts.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "commands.h"
#include "harness/grid.h"

namespace edge::cli {
namespace {

struct GridArgs {
  std::string file, out, plots, lock_file, gnuplot = "gnuplot";
  bool allow_noisy = false, quiet = false, dry_run = false;
  std::string command_line;
};

std::string self_path() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("edge-infer") : p.string();
}

int run_grid_cmd(const GridArgs& a) {
  auto spec = load_grid_spec(a.file, self_path());
  if (!spec) return report_error(spec.status());
  if (a.dry_run) {  // the plan only: each arm's argv, in the order of pass 0
    for (const ArmSpec& arm : spec->arms) {
      std::string line = arm.name + (arm.serve ? " (serve):" : ":");
      for (const std::string& w : arm.serve ? arm.load.command : arm.command) line += " " + w;
      std::printf("%s\n", line.c_str());
    }
    return 0;
  }
  GridOptions o;
  o.allow_noisy = a.allow_noisy;
  o.lock_path = a.lock_file;
  o.plots_dir = a.plots;
  o.gnuplot = a.gnuplot;
  o.command_line = a.command_line;
  o.quiet = a.quiet;
  auto doc = run_grid(*spec, o);
  if (!doc) return report_error(doc.status());
  std::printf("%s", grid_summary_text((*doc)["summary"]).c_str());
  if (doc->contains("plots_error"))
    std::fprintf(stderr, "edge-infer: warning: %s\n",
                 (*doc)["plots_error"].get<std::string>().c_str());
  if (!a.out.empty()) {
    std::ofstream f(a.out);
    f << doc->dump(1) << "\n";
    if (!f) return report_error(Status::io_error("cannot write " + a.out));
  } else {
    std::printf("%s\n", doc->dump(1).c_str());
  }
  return (*doc)["summary"]["failed_runs"].get<int>() > 0 ? 1 : 0;
}

}  // namespace

void register_grid(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<GridArgs>();
  auto* sub =
      app.add_subcommand("grid", "run a measurement grid file (arms, passes, pre-flight, plots)");
  sub->add_option("file", a->file, "grid file (YAML or JSON)")->required();
  sub->add_option("-o,--out", a->out, "write the result JSON here (default: stdout)");
  sub->add_option("--plots", a->plots, "write SVG charts (gnuplot) into this folder");
  sub->add_flag(
      "--allow-noisy", a->allow_noisy,
      "run even when the pre-flight finds a contended core; every record carries its load");
  sub->add_option("--lock-file", a->lock_file,
                  "host lock file (default /run/lock/edge-infer-grid.lock)");
  sub->add_option("--gnuplot", a->gnuplot, "gnuplot binary")->capture_default_str();
  sub->add_flag("-q,--quiet", a->quiet, "no progress lines");
  sub->add_flag("--dry-run", a->dry_run, "read the file and print each arm's command; run nothing");
  sub->callback([a, &ctx, sub] {
    a->command_line = "edge-infer grid";
    for (const std::string& s : sub->remaining(true)) a->command_line += " " + s;
    ctx.exit_code = run_grid_cmd(*a);
  });
}

}  // namespace edge::cli
