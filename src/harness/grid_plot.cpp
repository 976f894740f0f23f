#include "harness/grid_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "harness/grid_process.h"

namespace edge {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// gnuplot single-quoted strings: a quote is doubled.
std::string q(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("''") : std::string(1, c);
  return o + "'";
}

std::string safe_name(const std::string& s) {
  std::string o;
  for (char c : s)
    o += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_';
  return o;
}

std::string header(const std::string& svg, const std::string& title) {
  return fmt::format(
      "set terminal svg size 820,460 noenhanced font 'sans,12' background rgb 'white'\n"
      "set output {}\nset title {}\nset grid ytics lc rgb '#dddddd'\nset key outside right top\n",
      q(svg), q(title));
}

struct Plotter {
  std::string dir, gnuplot;
  json written = json::array();
  std::string failures;

  Status draw(const std::string& stem, const std::string& what, const std::string& script) {
    const std::string path = dir + "/data/" + stem + ".gp";
    std::ofstream(path) << script;
    SpawnOptions so;
    so.timeout_s = 60;
    ASSIGN_OR_RETURN(ProcessResult r, run_owned({gnuplot, path}, so));
    if (!r.ok()) {
      failures += stem + ": " + r.err.substr(0, 300) + "\n";
      return {};
    }
    written.push_back({{"file", stem + ".svg"}, {"what", what}});
    return {};
  }
};

// Median with min-max bars per arm, the pass values as open circles.
Status metric_chart(Plotter& p, const std::string& name, const json& m) {
  const std::string stem = "metric-" + safe_name(name);
  std::ofstream med(p.dir + "/data/" + stem + ".dat"), pts(p.dir + "/data/" + stem + "-passes.dat");
  int i = 0;
  for (const auto& [arm, a] : m["arms"].items()) {
    med << i << " " << a["median"].get<double>() << " " << a["min"].get<double>() << " "
        << a["max"].get<double>() << " \"" << arm << "\"\n";
    for (const json& v : a["values"]) pts << i << " " << v.get<double>() << "\n";
    ++i;
  }
  med.close();  // gnuplot reads them next
  pts.close();
  if (i == 0) return {};
  const std::string script =
      header(p.dir + "/" + stem + ".svg",
             fmt::format("{} ({}; band ±{:.1f}%)", name, m["direction"].get<std::string>(),
                         50.0 * m["band_rel"].get<double>())) +
      fmt::format(
          "set xrange [-0.6:{}]\nset yrange [0:*]\nset ylabel {}\nset xtics rotate by -20\n",
          i - 0.4, q(name)) +
      fmt::format(
          "plot {} using 1:2:3:4:xtic(5) with yerrorbars pt 7 ps 1.4 lw 2 lc rgb '#1f77b4' "
          "title 'median, min-max', {} using 1:2 with points pt 6 ps 1 lc rgb '#ff7f0e' title "
          "'passes'\n",
          q(p.dir + "/data/" + stem + ".dat"), q(p.dir + "/data/" + stem + "-passes.dat"));
  return p.draw(stem, "median and spread per arm: " + name, script);
}

// Empirical CDF per arm of one serve level's TTFT or ITL samples over all passes.
Status latency_cdf(Plotter& p, const json& runs, const std::vector<std::string>& arms, int streams,
                   const std::string& key) {
  const std::string stem = fmt::format("serve-c{}-{}", streams, key == "ttft_ms" ? "ttft" : "itl");
  std::string plot;
  for (const std::string& arm : arms) {
    std::vector<double> v;
    for (const json& r : runs)
      if (r["arm"] == arm && r.contains("serve"))
        for (const json& l : r["serve"]["levels"])
          if (l["streams"] == streams)
            for (const json& x : l[key]) v.push_back(x.get<double>());
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    const std::string dat = p.dir + "/data/" + stem + "-" + safe_name(arm) + ".dat";
    std::ofstream f(dat);
    for (size_t i = 0; i < v.size(); ++i)
      f << v[i] << " " << (i + 1.0) / static_cast<double>(v.size()) << "\n";
    plot += (plot.empty() ? "plot " : ", ") + q(dat) + " using 1:2 with steps lw 2 title " + q(arm);
  }
  if (plot.empty()) return {};
  const std::string what = key == "ttft_ms" ? "time to first token" : "inter-token latency";
  const std::string script =
      header(p.dir + "/" + stem + ".svg", fmt::format("{} at {} streams (CDF)", what, streams)) +
      fmt::format("set xlabel {}\nset ylabel 'fraction of samples'\nset yrange [0:1]\n",
                  q(key == "ttft_ms" ? "TTFT (ms)" : "ITL (ms)")) +
      plot + "\n";
  return p.draw(stem, fmt::format("{} distribution at {} streams", what, streams), script);
}

// RssAnon over time, the last pass of each arm that was sampled.
Status memory_chart(Plotter& p, const json& runs, const std::vector<std::string>& arms) {
  std::string plot;
  for (const std::string& arm : arms) {
    const json* last = nullptr;
    for (const json& r : runs)
      if (r["arm"] == arm && r.contains("rss_mib") && !r["rss_mib"].empty()) last = &r;
    if (!last) continue;
    const std::string dat = p.dir + "/data/rss-" + safe_name(arm) + ".dat";
    std::ofstream f(dat);
    for (const json& pt : (*last)["rss_mib"])
      f << pt[0].get<double>() << " " << pt[1].get<double>() << "\n";
    plot += (plot.empty() ? "plot " : ", ") + q(dat) + " using 1:2 with lines lw 2 title " + q(arm);
  }
  if (plot.empty()) return {};
  const std::string script =
      header(p.dir + "/rss.svg", "RssAnon over time (process tree, last pass)") +
      "set xlabel 'seconds since start'\nset ylabel 'RssAnon (MiB)'\nset yrange [0:*]\n" + plot +
      "\n";
  return p.draw("rss", "memory over time per arm", script);
}

}  // namespace

Expected<nlohmann::json> write_grid_plots(const nlohmann::json& grid, const std::string& dir,
                                          const std::string& gnuplot) {
  std::error_code ec;
  fs::create_directories(dir + "/data", ec);
  if (ec) return Status::io_error("cannot create " + dir + "/data: " + ec.message());
  Plotter p{dir, gnuplot};
  const std::vector<std::string> arms = grid["arms"].get<std::vector<std::string>>();
  for (const auto& [name, m] : grid["summary"]["metrics"].items())
    RETURN_IF_ERROR(metric_chart(p, name, m));
  std::vector<int> levels;
  for (const json& r : grid["runs"])
    if (r.contains("serve"))
      for (const json& l : r["serve"]["levels"]) levels.push_back(l["streams"].get<int>());
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  for (int c : levels) {
    RETURN_IF_ERROR(latency_cdf(p, grid["runs"], arms, c, "ttft_ms"));
    RETURN_IF_ERROR(latency_cdf(p, grid["runs"], arms, c, "itl_ms"));
  }
  RETURN_IF_ERROR(memory_chart(p, grid["runs"], arms));
  if (!p.failures.empty()) return Status::internal("gnuplot failed: " + p.failures);
  return p.written;
}

}  // namespace edge
