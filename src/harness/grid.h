// The grid runner (docs/grid.md, docs/measuring.md): arms (commands, our own bench, or servers
// under a built-in streaming load) measured in passes that rotate the starting arm, after
// a per-core pre-flight and under an advisory host lock; per arm and metric the median
// and spread; a comparison is "not a ranking" when its gap is inside the spread; bands
// per metric from the observed spread (reported, never a gate); provenance on every run.
//
// Grid file (YAML or JSON; "${NAME}" anywhere is replaced from the environment):
//   name: tiny
//   passes: 3            # pass p starts at arm p mod n
//   cpus: [0]            # cores the arms are pinned to (default: this process's)
//   max_busy: 0.25       # pre-flight threshold per core
//   timeout_s: 600       # per arm run; the child is killed after it
//   metrics: [tg16_ts]   # optional filter (default: every metric the arms report; command
//                        # arms always report wall_s, cpu_user_s and peak_rss_anon_mib)
//   arms:
//     - name: f32
//       bench: {model: m.gguf, p: 0, n: 16, r: 3, t: 1}   # `edge-infer bench -o json`
//     - name: llama
//       command: [/opt/llama-bench, -m, m.gguf, -o, md]  # argv, no shell; {edge} = this binary,
//                                 # {scratch} = a folder of the run's own, removed after it
//       parse: llama-bench-md   # auto | json | llama-bench-json | llama-bench-md | none
//       model: m.gguf           # hashed for provenance (bench arms: their model)
//     - name: serve
//       serve: {command: ["{edge}", serve, -m, m.gguf, --port, "{port}"], streams: [1, 4],
//               requests: 8, max_tokens: 32, prompt_words: 100, unique_prompts: true}
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace edge {

enum class ParseMode { kAuto, kJson, kLlamaBenchJson, kLlamaBenchMd, kNone };

struct ServeLoad {
  std::vector<std::string> command;  // "{port}" replaced by a free port
  std::vector<int> streams = {1};    // concurrent streams, one level each
  int requests = 8;                  // per level (at least the level's streams)
  int max_tokens = 32;
  int prompt_words = 100;
  bool unique_prompts = false;  // a different first word per request: no prefix cache hit
  double ready_timeout_s = 300;
  double request_timeout_s = 600;  // the grid's timeout_s: a read that stalls this long fails
  int rss_interval_ms = 50;        // the server's RssAnon over time (0: not sampled)
};

struct ArmSpec {
  std::string name;
  std::vector<std::string> command;  // empty for serve arms
  ParseMode parse = ParseMode::kAuto;
  bool serve = false;
  ServeLoad load;
  std::string model;      // for the sha256 in provenance
  bool ours = false;      // an edge-infer bench arm
  nlohmann::json config;  // the arm as written in the file
};

struct GridSpec {
  std::string name = "grid";
  int passes = 3;
  std::vector<int> cpus;
  double max_busy = 0.25;
  double preflight_s = 0.5;
  double timeout_s = 600;
  int rss_interval_ms = 50;
  std::vector<std::string> metrics;
  std::vector<ArmSpec> arms;
};

// `edge_binary` replaces "{edge}" in commands and runs bench arms.
Expected<GridSpec> parse_grid_spec(const std::string& text, const std::string& edge_binary);
Expected<GridSpec> load_grid_spec(const std::string& path, const std::string& edge_binary);

struct GridOptions {
  bool allow_noisy = false;  // run a contended grid, every run labelled with its load
  std::string lock_path;     // empty: default_grid_lock_path()
  std::string plots_dir;     // empty: no plots
  std::string gnuplot = "gnuplot";
  std::string command_line;  // recorded in the result
  bool quiet = false;        // no progress lines on stderr
};

// Runs the grid; the result has "runs" (one record per arm and pass, each with its
// provenance), "summary" and, with plots_dir, "plots". Refused (resource_exhausted) when
// another grid holds the lock or, without allow_noisy, when the pre-flight finds a core
// over max_busy.
Expected<nlohmann::json> run_grid(const GridSpec& spec, const GridOptions& o);

// --- pieces, exposed for tests ---
// Arm indices in the order pass `pass` runs them: a rotation starting at pass mod n.
std::vector<size_t> pass_order(size_t n_arms, int pass);
// Lower is better for times, latencies, sizes and errors; higher for rates and
// throughputs. `why` gets the rule that decided.
bool lower_is_better(const std::string& metric, std::string* why = nullptr);
// Metrics from one arm's stdout. `engine` (may be null) gets our bench's engine
// provenance (kernel path actually used) when the output carries it.
Expected<std::map<std::string, double>> parse_arm_output(const std::string& out, ParseMode mode,
                                                         nlohmann::json* engine);
// Medians, spread, bands and comparisons from run records ({arm, metrics{...}}).
nlohmann::json summarize_runs(const nlohmann::json& runs,
                              const std::vector<std::string>& arm_order);
// A human summary: one line per metric and arm, then the comparisons.
std::string grid_summary_text(const nlohmann::json& summary);

}  // namespace edge
