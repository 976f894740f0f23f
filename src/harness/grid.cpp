#include "harness/grid.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "harness/grid_host.h"
#include "harness/grid_plot.h"
#include "harness/grid_process.h"
#include "harness/grid_serve.h"
#include "harness/provenance.h"
#include "pipeline/graph/artifact.h"

namespace edge {
namespace {

using json = nlohmann::json;

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

json rss_series(const std::vector<RssPoint>& pts) {
  json a = json::array();
  for (const RssPoint& p : pts) a.push_back({p.t_s, p.anon / 1048576.0, p.anon_file / 1048576.0});
  return a;
}

// One command arm (ours or not) run once, output parsed into metrics.
void run_command_arm(const ArmSpec& arm, const GridSpec& g, const std::vector<int>& cpus,
                     json& rec) {
  SpawnOptions so;
  so.cpus = cpus;
  so.timeout_s = g.timeout_s;
  so.rss_interval_ms = g.rss_interval_ms;
  // "{scratch}": a folder of this run's own (e.g. a quantiser's output), removed after it.
  std::vector<std::string> argv = arm.command;
  char tpl[] = "/tmp/edge-grid-scratch-XXXXXX";
  const bool scratch = std::any_of(argv.begin(), argv.end(), [](const std::string& a) {
    return a.find("{scratch}") != std::string::npos;
  });
  const std::string dir = scratch && ::mkdtemp(tpl) ? tpl : "";
  for (std::string& a : argv)
    for (size_t i = a.find("{scratch}"); !dir.empty() && i != std::string::npos;
         i = a.find("{scratch}"))
      a.replace(i, 9, dir);
  auto r = run_owned(argv, so);
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  if (!r) {
    rec["ok"] = false;
    rec["error"] = r.status().to_string();
    return;
  }
  rec["wall_s"] = r->wall_s;
  rec["exit_code"] = r->exit_code;
  if (r->term_signal) rec["signal"] = r->term_signal;
  rec["timed_out"] = r->timed_out;
  if (!r->rss.empty()) {
    rec["rss_mib"] = rss_series(r->rss);  // [t_s, RssAnon MiB, RssAnon+RssFile MiB]
    rec["peak_rss_anon_mib"] = r->peak_anon / 1048576.0;
  }
  if (!r->ok()) {
    rec["ok"] = false;
    rec["error"] = r->timed_out ? fmt::format("killed after the {} s timeout", g.timeout_s)
                                : fmt::format("exit {} signal {}", r->exit_code, r->term_signal);
    rec["stderr_tail"] = r->err.substr(r->err.size() > 2000 ? r->err.size() - 2000 : 0);
    return;
  }
  json engine;
  auto m = parse_arm_output(r->out, arm.parse, &engine);
  if (!m) {
    rec["ok"] = false;
    rec["error"] = m.status().to_string();
    rec["stdout_head"] = r->out.substr(0, 2000);
    return;
  }
  json metrics(*m);
  metrics["wall_s"] = r->wall_s;
  metrics["cpu_user_s"] = r->cpu_user_s;
  if (r->peak_anon > 0) metrics["peak_rss_anon_mib"] = r->peak_anon / 1048576.0;
  if (r->peak_anon_file > 0) metrics["peak_rss_anon_file_mib"] = r->peak_anon_file / 1048576.0;
  rec["metrics"] = metrics;
  rec["ok"] = true;
  if (!engine.is_null()) {
    rec["provenance"]["engine"] = engine;
    if (engine.contains("kernel_path")) rec["provenance"]["kernel_path"] = engine["kernel_path"];
    rec["provenance"]["threads"] = engine.value("n_threads", 0);
  }
}

void run_serve_arm_once(const ArmSpec& arm, const std::vector<int>& cpus, int seed, json& rec) {
  auto r = run_serve_arm(arm.load, cpus, seed);
  if (!r) {
    rec["ok"] = false;
    rec["error"] = r.status().to_string();
    return;
  }
  std::map<std::string, double> m;
  json levels = json::array();
  for (const ServeLevelResult& l : r->levels) {
    l.add_metrics(m);
    levels.push_back({{"streams", l.streams},
                      {"requests", l.requests},
                      {"tokens", l.tokens},
                      {"wall_s", l.wall_s},
                      {"errors", l.errors},
                      {"error_samples", l.error_samples},
                      {"ttft_ms", l.ttft_ms},
                      {"itl_ms", l.itl_ms}});
  }
  m["ready_s"] = r->ready_s;
  if (r->peak_anon > 0) m["peak_rss_anon_mib"] = r->peak_anon / 1048576.0;
  if (!r->rss.empty()) rec["rss_mib"] = rss_series(r->rss);  // [t_s, RssAnon MiB, +RssFile MiB]
  rec["metrics"] = m;
  rec["serve"] = {{"ready_s", r->ready_s},
                  {"model_id", r->model_id},
                  {"stopped", r->stopped},
                  {"levels", levels}};
  rec["ok"] = true;
}

std::string cpus_text(const std::vector<int>& cpus) {
  std::string s;
  for (int c : cpus) s += (s.empty() ? "" : ",") + std::to_string(c);
  return s;
}

// One arm's values of one metric over the passes that produced it.
struct ArmStat {
  std::string arm;
  double med, lo, hi;
  size_t n;
};

// The arms' figures for metric `name` (median, min, max, values, contended runs) in arm
// order, with `stats` for the comparisons; `band` becomes the largest relative spread.
json arm_figures(const json& runs, const std::vector<std::string>& arm_order,
                 const std::string& name, std::vector<ArmStat>& stats, double& band) {
  json arms = json::object();
  for (const std::string& arm : arm_order) {
    std::vector<double> v;
    int noisy = 0;
    for (const json& r : runs)
      if (r["arm"] == arm && r.value("ok", false) && r["metrics"].contains(name)) {
        v.push_back(r["metrics"][name].get<double>());
        noisy += r.value("contended", false);
      }
    if (v.empty()) continue;
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    const double med = median_of(v);
    const double spread = med != 0 ? (*hi - *lo) / std::abs(med) : 0;
    band = std::max(band, spread);
    arms[arm] = {{"median", med},          {"min", *lo},           {"max", *hi},
                 {"n", v.size()},          {"spread_rel", spread}, {"values", v},
                 {"contended_runs", noisy}};
    stats.push_back({arm, med, *lo, *hi, v.size()});
  }
  return arms;
}

// The best arm (stats[0], sorted best first) against each other arm: how many times better
// it is, and whether that gap is a ranking or lies inside the spread.
json compare_to_best(const std::vector<ArmStat>& stats, const json& arms, bool lower, double band) {
  json cmp = json::array();
  for (size_t i = 1; i < stats.size(); ++i) {
    const ArmStat &best = stats[0], &o = stats[i];
    // How many times better the best arm is; null when that divides by zero (0 errors).
    const double num = lower ? o.med : best.med, den = lower ? best.med : o.med;
    const json factor = num == den ? json(1.0) : den != 0 ? json(num / den) : json(nullptr);
    const double f = factor.is_null() ? 0.0 : factor.get<double>();
    const bool overlap = best.lo <= o.hi && o.lo <= best.hi;
    std::string verdict = "ranking";
    if (best.n < 2 || o.n < 2)
      verdict = "not a ranking: fewer than 2 passes, no spread to judge the gap";
    else if (overlap || (!factor.is_null() && std::abs(f - 1) <= band))
      verdict = "not a ranking: the gap is inside the spread";
    if (arms.at(best.arm)["contended_runs"].get<int>() +
            arms.at(o.arm)["contended_runs"].get<int>() >
        0)
      verdict += " (from runs the pre-flight found contended)";
    cmp.push_back(
        {{"better", best.arm}, {"other", o.arm}, {"factor", factor}, {"verdict", verdict}});
  }
  return cmp;
}

// One metric over all arms: its direction, the arms' figures and the comparisons.
json summarize_metric(const json& runs, const std::vector<std::string>& arm_order,
                      const std::string& name) {
  std::string why;
  const bool lower = lower_is_better(name, &why);
  double band = 0;
  std::vector<ArmStat> stats;
  const json arms = arm_figures(runs, arm_order, name, stats, band);
  std::stable_sort(stats.begin(), stats.end(), [&](const ArmStat& a, const ArmStat& b) {
    return lower ? a.med < b.med : a.med > b.med;
  });
  return {{"direction", lower ? "lower is better" : "higher is better"},
          {"direction_rule", why},
          {"band_rel", band},
          {"band_note",
           "the largest relative spread (max-min)/median over the arms in this run; "
           "reported, never a gate"},
          {"arms", arms},
          {"comparisons", compare_to_best(stats, arms, lower, band)}};
}

// Decode against the bandwidth ceiling measured in the same run, per arm (our bench arms).
json roofline_of(const json& metrics) {
  json roofline = json::object();
  for (const auto& [name, m] : metrics.items()) {
    const std::string suffix = "_fraction_of_ceiling";
    if (name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string test = name.substr(0, name.size() - suffix.size());
    for (const auto& [arm, a] : m["arms"].items()) {
      json e = {{"test", test}, {"fraction_of_ceiling_median", a["median"]}};
      if (metrics.contains(test + "_gbps") && metrics[test + "_gbps"]["arms"].contains(arm))
        e["effective_gbps_median"] = metrics[test + "_gbps"]["arms"][arm]["median"];
      if (metrics.contains(test + "_ceiling_gbps") &&
          metrics[test + "_ceiling_gbps"]["arms"].contains(arm))
        e["ceiling_gbps_median"] = metrics[test + "_ceiling_gbps"]["arms"][arm]["median"];
      roofline[arm].push_back(e);
    }
  }
  return roofline;
}

}  // namespace

nlohmann::json summarize_runs(const nlohmann::json& runs,
                              const std::vector<std::string>& arm_order) {
  std::set<std::string> names;
  for (const json& r : runs)
    if (r.value("ok", false))
      for (const auto& [k, v] : r["metrics"].items()) names.insert(k);
  json metrics = json::object();
  for (const std::string& name : names) metrics[name] = summarize_metric(runs, arm_order, name);
  int failed = 0, noisy = 0;
  for (const json& r : runs) {
    failed += !r.value("ok", false);
    noisy += r.value("contended", false);
  }
  return {{"metrics", metrics},
          {"roofline", roofline_of(metrics)},
          {"failed_runs", failed},
          {"contended_runs", noisy}};
}

std::string grid_summary_text(const nlohmann::json& summary) {
  std::string s;
  for (const auto& [name, m] : summary["metrics"].items()) {
    s += fmt::format("{} ({}; band ±{:.1f}%)\n", name, m["direction"].get<std::string>(),
                     50.0 * m["band_rel"].get<double>());
    for (const auto& [arm, a] : m["arms"].items())
      s += fmt::format("  {:<24} median {:<12.6g} [{:.6g} .. {:.6g}] n={}{}\n", arm,
                       a["median"].get<double>(), a["min"].get<double>(), a["max"].get<double>(),
                       a["n"].get<int>(),
                       a["contended_runs"].get<int>()
                           ? fmt::format(" ({} contended)", a["contended_runs"].get<int>())
                           : "");
    for (const json& c : m["comparisons"])
      s += fmt::format("  {} over {}: {} — {}\n", c["better"].get<std::string>(),
                       c["other"].get<std::string>(),
                       c["factor"].is_null() ? std::string("x-")
                                             : fmt::format("x{:.3f}", c["factor"].get<double>()),
                       c["verdict"].get<std::string>());
  }
  const json roofline = summary.value("roofline", json::object());  // held: items() does not own it
  for (const auto& [arm, tests] : roofline.items())
    for (const json& t : tests)
      s += fmt::format(
          "roofline: {} {} decode at {:.1f}% of the bandwidth ceiling measured in the same run\n",
          arm, t["test"].get<std::string>(), 100 * t["fraction_of_ceiling_median"].get<double>());
  if (summary["failed_runs"].get<int>() > 0)
    s += fmt::format("{} run(s) failed\n", summary["failed_runs"].get<int>());
  if (summary["contended_runs"].get<int>() > 0)
    s += fmt::format("{} run(s) labelled contended by the pre-flight\n",
                     summary["contended_runs"].get<int>());
  return s;
}

namespace {

// The cores the grid runs on: the spec's, each one this process may use (the children are
// pinned there: a core we may not use would be a lie), or else all of its affinity.
Expected<std::vector<int>> grid_cpus(const GridSpec& g) {
  const std::vector<int> allowed = allowed_cores();
  const std::vector<int> cpus = g.cpus.empty() ? allowed : g.cpus;
  for (int c : cpus)
    if (std::find(allowed.begin(), allowed.end(), c) == allowed.end())
      return Status::invalid_argument(fmt::format(
          "grid cpus: core {} is not in this process's affinity ({})", c, cpus_text(allowed)));
  return cpus;
}

// The sha256 of each arm's model file (or why it could not be read), by path.
std::map<std::string, std::string> model_hashes(const GridSpec& g) {
  std::map<std::string, std::string> sha;
  for (const ArmSpec& a : g.arms)
    if (!a.model.empty() && !sha.count(a.model)) {
      auto h = pipeline::sha256_file(a.model);
      sha[a.model] = h ? *h : "unreadable: " + h.status().to_string();
    }
  return sha;
}

// What one run of `arm` records about where and how it ran (the engine's own account, when
// the arm reports one, is added by run_command_arm).
json run_provenance(const ArmSpec& arm, const json& machine, const std::vector<int>& cpus,
                    const std::map<std::string, std::string>& sha) {
  json prov = machine;
  prov["time"] = iso_time_now();
  prov["affinity"] = cpus;
  prov["argv"] = arm.serve ? json(arm.load.command) : json(arm.command);
  prov["configuration"] = arm.config;
  prov["kernel_path"] = arm.ours ? "unknown" : "external (not ours)";
  if (!arm.model.empty()) prov["model_sha256"] = sha.at(arm.model);
  if (arm.config.contains("bench") && arm.config["bench"].contains("t"))
    prov["threads"] = arm.config["bench"]["t"];
  return prov;
}

// Where a run happens: the grid's cores, the machine and the models' hashes.
struct RunSite {
  const std::vector<int>& cpus;
  const json& machine;
  const std::map<std::string, std::string>& sha;
};

// One run of `arm` (pass p, position pos in that pass's order): its pre-flight, then its
// provenance (timed after the pre-flight) and results, with the metrics cut to the grid's
// list when it has one.
json run_arm_once(const ArmSpec& arm, const GridSpec& g, const RunSite& site, int p, size_t pos) {
  const std::vector<int>& cpus = site.cpus;
  auto before = preflight_cores(cpus, g.preflight_s, g.max_busy);
  json rec = {{"arm", arm.name}, {"pass", p}, {"position", pos}};
  if (before) {
    rec["preflight"] = before->to_json();
    rec["contended"] = before->contended;
  }
  rec["provenance"] = run_provenance(arm, site.machine, cpus, site.sha);
  if (arm.serve)
    run_serve_arm_once(arm, cpus, p, rec);
  else
    run_command_arm(arm, g, cpus, rec);
  if (rec.value("ok", false) && !g.metrics.empty()) {
    json kept = json::object();
    for (const std::string& m : g.metrics)
      if (rec["metrics"].contains(m)) kept[m] = rec["metrics"][m];
    rec["metrics"] = kept;
  }
  return rec;
}

}  // namespace

Expected<nlohmann::json> run_grid(const GridSpec& g, const GridOptions& o) {
  ASSIGN_OR_RETURN(HostLock lock,
                   HostLock::acquire(o.lock_path.empty() ? default_grid_lock_path() : o.lock_path));
  ASSIGN_OR_RETURN(const std::vector<int> cpus, grid_cpus(g));
  ASSIGN_OR_RETURN(Preflight pf, preflight_cores(cpus, g.preflight_s, g.max_busy));
  if (pf.contended && !o.allow_noisy)
    return Status::resource_exhausted(fmt::format(
        "pre-flight: a core the grid would use is {:.0f}% busy (threshold {:.0f}%) on cpus {}; the "
        "figures would measure the other tenants. Run on an idle machine, or pass --allow-noisy to "
        "run anyway with every record labelled",
        100 * pf.max_busy, 100 * g.max_busy, cpus_text(cpus)));
  const json machine = machine_provenance();
  const std::map<std::string, std::string> sha = model_hashes(g);  // model path -> sha256
  const RunSite site{cpus, machine, sha};
  std::vector<std::string> names;
  for (const ArmSpec& a : g.arms) names.push_back(a.name);
  json runs = json::array();
  for (int p = 0; p < g.passes; ++p) {
    const std::vector<size_t> order = pass_order(g.arms.size(), p);
    for (size_t pos = 0; pos < order.size(); ++pos) {
      const ArmSpec& arm = g.arms[order[pos]];
      json rec = run_arm_once(arm, g, site, p, pos);
      if (!o.quiet)
        std::fprintf(
            stderr, "grid: pass %d %-20s %s%s\n", p, arm.name.c_str(),
            rec.value("ok", false) ? "ok" : rec.value("error", std::string("failed")).c_str(),
            rec.value("contended", false) ? " (contended)" : "");
      runs.push_back(std::move(rec));
    }
  }
  json doc = {{"grid", g.name},
              {"command", o.command_line},
              {"passes", g.passes},
              {"cpus", cpus},
              {"max_busy", g.max_busy},
              {"allow_noisy", o.allow_noisy},
              {"preflight", pf.to_json()},
              {"host_lock", lock.path()},
              {"machine", machine},
              {"arms", names},
              {"runs", runs},
              {"summary", summarize_runs(runs, names)}};
  if (!o.plots_dir.empty()) {
    auto plots = write_grid_plots(doc, o.plots_dir, o.gnuplot);
    if (plots)
      doc["plots"] = *plots;
    else
      doc["plots_error"] = plots.status().to_string();
  }
  return doc;
}

}  // namespace edge
