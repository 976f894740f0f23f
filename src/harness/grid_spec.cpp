// Grid files (YAML or JSON, both read by yaml-cpp) into GridSpec; arm output into metrics;
// the direction of a metric from its name.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "harness/grid.h"

namespace edge {
namespace {

using json = nlohmann::json;

// YAML scalars become numbers or booleans when they read as such, strings otherwise.
json yaml_to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& e : n) a.push_back(yaml_to_json(e));
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = yaml_to_json(kv.second);
      return o;
    }
    case YAML::NodeType::Scalar: {
      const std::string s = n.Scalar();
      if (n.Tag() == "!") return s;  // quoted: a string as written
      long long i = 0;
      double d = 0;
      if (YAML::convert<long long>::decode(n, i)) return i;
      if (YAML::convert<double>::decode(n, d)) return d;
      if (s == "true" || s == "false") return s == "true";
      return s;
    }
    default:
      return nullptr;
  }
}

std::string scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_array()) {  // [64, 128] -> "64,128", as bench's list options take them
    std::string s;
    for (const json& e : v) s += (s.empty() ? "" : ",") + scalar_text(e);
    return s;
  }
  return v.dump();
}

Expected<std::vector<std::string>> argv_of(const json& v, const std::string& arm,
                                           const std::string& edge) {
  if (!v.is_array() || v.empty())
    return Status::invalid_argument("arm '" + arm +
                                    "': command must be a non-empty list (argv, no shell)");
  std::vector<std::string> out;
  for (const json& e : v) {
    std::string s = scalar_text(e);
    if (s == "{edge}") s = edge;
    out.push_back(s);
  }
  return out;
}

Expected<ParseMode> parse_mode(const std::string& s) {
  if (s == "auto") return ParseMode::kAuto;
  if (s == "json") return ParseMode::kJson;
  if (s == "llama-bench-json") return ParseMode::kLlamaBenchJson;
  if (s == "llama-bench-md") return ParseMode::kLlamaBenchMd;
  if (s == "none") return ParseMode::kNone;
  return Status::invalid_argument(
      "parse must be auto, json, llama-bench-json, llama-bench-md or none (got " + s + ")");
}

// bench: {model, p, n, r, t, args: [...]} -> `edge bench ... -o json`.
std::vector<std::string> bench_argv(const json& b, const std::string& edge) {
  std::vector<std::string> a = {edge, "bench"};
  for (const auto& [key, flag] :
       std::vector<std::pair<std::string, std::string>>{{"model", "-m"},
                                                        {"p", "-p"},
                                                        {"n", "-n"},
                                                        {"r", "-r"},
                                                        {"t", "-t"},
                                                        {"kv_type", "--kv-type"}}) {
    if (b.contains(key)) {
      a.push_back(flag);
      a.push_back(scalar_text(b[key]));
    }
  }
  if (b.contains("args"))
    for (const json& e : b["args"]) a.push_back(scalar_text(e));
  a.insert(a.end(), {"-o", "json"});
  return a;
}

Expected<ArmSpec> parse_arm(const json& a, const std::string& edge) {
  ArmSpec arm;
  if (!a.is_object() || !a.contains("name"))
    return Status::invalid_argument("every arm needs a name");
  arm.name = scalar_text(a["name"]);
  arm.config = a;
  if (a.contains("model")) arm.model = scalar_text(a["model"]);
  const int kinds = a.contains("command") + a.contains("bench") + a.contains("serve");
  if (kinds != 1)
    return Status::invalid_argument("arm '" + arm.name +
                                    "': give exactly one of command, bench, serve");
  if (a.contains("command")) {
    ASSIGN_OR_RETURN(arm.command, argv_of(a["command"], arm.name, edge));
    ASSIGN_OR_RETURN(arm.parse, parse_mode(a.value("parse", std::string("auto"))));
  } else if (a.contains("bench")) {
    if (!a["bench"].is_object())
      return Status::invalid_argument("arm '" + arm.name + "': bench must be a map");
    arm.command = bench_argv(a["bench"], edge);
    arm.parse = ParseMode::kLlamaBenchJson;
    arm.ours = true;
    if (a["bench"].contains("model")) arm.model = scalar_text(a["bench"]["model"]);
  } else {
    const json& s = a["serve"];
    if (!s.is_object() || !s.contains("command"))
      return Status::invalid_argument("arm '" + arm.name + "': serve needs a command");
    arm.serve = true;
    ASSIGN_OR_RETURN(arm.load.command, argv_of(s["command"], arm.name, edge));
    if (s.contains("streams")) {
      arm.load.streams.clear();
      for (const json& e : (s["streams"].is_array() ? s["streams"] : json::array({s["streams"]})))
        arm.load.streams.push_back(e.get<int>());
    }
    arm.load.requests = s.value("requests", arm.load.requests);
    arm.load.max_tokens = s.value("max_tokens", arm.load.max_tokens);
    arm.load.prompt_words = s.value("prompt_words", arm.load.prompt_words);
    arm.load.unique_prompts = s.value("unique_prompts", false);
    arm.load.ready_timeout_s = s.value("ready_timeout_s", arm.load.ready_timeout_s);
    for (int c : arm.load.streams)
      if (c < 1) return Status::invalid_argument("arm '" + arm.name + "': streams must be >= 1");
  }
  return arm;
}

// The first JSON value in `out` (tools print banners before it).
json first_json(const std::string& out) {
  const size_t i = out.find_first_of("[{");
  if (i == std::string::npos) return nullptr;
  return json::parse(out.substr(i), nullptr, false);
}

void flatten(const json& v, const std::string& prefix, std::map<std::string, double>& m) {
  if (v.is_number()) {
    m[prefix] = v.get<double>();
  } else if (v.is_object()) {
    for (const auto& [k, e] : v.items()) flatten(e, prefix.empty() ? k : prefix + "." + k, m);
  }
}

// llama-bench records (ours carry the same fields): pp<N>_ts / tg<N>_ts, and from our tg
// records the roofline: bytes per token, effective GB/s and the fraction of the ceiling.
void from_bench_records(const json& recs, std::map<std::string, double>& m, json* engine) {
  for (const json& r : recs) {
    if (!r.is_object() || !r.contains("avg_ts")) continue;
    const int np = r.value("n_prompt", 0), ng = r.value("n_gen", 0);
    if (r.contains("speculative")) {  // bench --spec-acceptance: one record per alpha
      const json& sp = r["speculative"];
      char alpha[16];
      std::snprintf(alpha, sizeof alpha, "%.2f", sp.value("alpha", 0.0));
      const std::string t = "tg" + std::to_string(ng) + "_spec_a" + alpha;
      m[t + "_ts"] = r["avg_ts"].get<double>();
      m[t + "_plain_ts"] = r.value("plain_ts", 0.0);
      m[t + "_speedup"] = r.value("speedup", 0.0);
      m[t + "_tokens_per_pass"] = sp.value("tokens_per_pass", 0.0);
      if (engine && r.contains("provenance") && r["provenance"].contains("engine"))
        *engine = r["provenance"]["engine"];
      continue;
    }
    const std::string test = np > 0 ? "pp" + std::to_string(np) : "tg" + std::to_string(ng);
    m[test + "_ts"] = r["avg_ts"].get<double>();
    if (r.contains("roofline")) {
      const json& rf = r["roofline"];
      m[test + "_gbps"] = rf.value("effective_gbps", 0.0);
      m[test + "_fraction_of_ceiling"] = rf.value("fraction_of_ceiling", 0.0);
      m[test + "_ceiling_gbps"] = rf.value("ceiling_gbps", 0.0);
      m[test + "_bytes_per_token"] = rf.value("bytes_per_token", 0.0);
    }
    if (!engine) continue;
    if (r.contains("provenance") && r["provenance"].contains("engine"))
      *engine = r["provenance"]["engine"];
    else if (r.contains(
                 "n_threads"))  // llama-bench: threads and backend, its kernels unknown to us
      *engine = {{"n_threads", r["n_threads"]},
                 {"backends", r.value("backends", std::string())},
                 {"build_commit", r.value("build_commit", std::string())}};
  }
}

// llama-bench's markdown table: the "test" column and the "t/s" column ("12.3 ± 0.4").
Status from_markdown(const std::string& out, std::map<std::string, double>& m) {
  std::istringstream in(out);
  std::string line;
  int test_col = -1, ts_col = -1;
  auto cells = [](const std::string& l) {
    std::vector<std::string> c;
    std::stringstream ss(l);
    std::string cell;
    std::getline(ss, cell, '|');  // before the first bar
    while (std::getline(ss, cell, '|')) {
      const size_t b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      c.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    return c;
  };
  while (std::getline(in, line)) {
    if (line.find('|') == std::string::npos) continue;
    const std::vector<std::string> c = cells(line);
    if (test_col < 0) {
      for (size_t i = 0; i < c.size(); ++i) {
        if (c[i] == "test") test_col = static_cast<int>(i);
        if (c[i] == "t/s") ts_col = static_cast<int>(i);
      }
      if (ts_col < 0) test_col = -1;
      continue;
    }
    if (static_cast<int>(c.size()) <= std::max(test_col, ts_col) || c[ts_col].empty() ||
        c[ts_col][0] == '-')
      continue;
    char* end = nullptr;
    const double v = std::strtod(c[ts_col].c_str(), &end);
    if (end != c[ts_col].c_str() && !c[test_col].empty()) m[c[test_col] + "_ts"] = v;
  }
  if (m.empty())
    return Status::invalid_format("no llama-bench table (test and t/s columns) in the output");
  return {};
}

// "${NAME}" from the environment (paths to other programs and models differ per machine);
// an unset name is an error, not an empty string.
Expected<std::string> expand_env(const std::string& text) {
  std::string out;
  size_t i = 0;
  for (size_t b = text.find("${"); b != std::string::npos; b = text.find("${", i)) {
    const size_t e = text.find('}', b);
    if (e == std::string::npos) break;
    const std::string name = text.substr(b + 2, e - b - 2);
    const char* v = std::getenv(name.c_str());
    if (!v)
      return Status::invalid_argument("grid file: ${" + name + "} is not set in the environment");
    out += text.substr(i, b - i) + v;
    i = e + 1;
  }
  return out + text.substr(i);
}

}  // namespace

Expected<GridSpec> parse_grid_spec(const std::string& raw_text, const std::string& edge_binary) {
  ASSIGN_OR_RETURN(const std::string text, expand_env(raw_text));
  json doc;
  try {
    doc = yaml_to_json(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    return Status::invalid_format(std::string("grid file: ") + e.what());
  }
  if (!doc.is_object() || !doc.contains("arms") || !doc["arms"].is_array() || doc["arms"].empty())
    return Status::invalid_argument("grid file: needs a non-empty 'arms' list");
  GridSpec g;
  try {
    g.name = doc.contains("name") ? scalar_text(doc["name"]) : g.name;
    g.passes = doc.value("passes", g.passes);
    g.max_busy = doc.value("max_busy", g.max_busy);
    g.preflight_s = doc.value("preflight_s", g.preflight_s);
    g.timeout_s = doc.value("timeout_s", g.timeout_s);
    g.rss_interval_ms = doc.value("rss_interval_ms", g.rss_interval_ms);
    if (doc.contains("cpus"))
      for (const json& c : doc["cpus"]) g.cpus.push_back(c.get<int>());
    if (doc.contains("metrics"))
      for (const json& c : doc["metrics"]) g.metrics.push_back(scalar_text(c));
    for (const json& a : doc["arms"]) {
      ASSIGN_OR_RETURN(ArmSpec arm, parse_arm(a, edge_binary));
      for (const ArmSpec& other : g.arms)
        if (other.name == arm.name)
          return Status::invalid_argument("grid file: two arms named '" + arm.name + "'");
      g.arms.push_back(std::move(arm));
    }
  } catch (const json::exception& e) {
    return Status::invalid_argument(std::string("grid file: ") + e.what());
  }
  for (ArmSpec& a : g.arms) {
    a.load.request_timeout_s = g.timeout_s;
    a.load.rss_interval_ms = g.rss_interval_ms;
  }
  if (g.passes < 1) return Status::invalid_argument("grid file: passes must be >= 1");
  if (g.timeout_s <= 0) return Status::invalid_argument("grid file: timeout_s must be positive");
  return g;
}

Expected<GridSpec> load_grid_spec(const std::string& path, const std::string& edge_binary) {
  std::ifstream in(path);
  if (!in) return Status::not_found("cannot read grid file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto g = parse_grid_spec(ss.str(), edge_binary);
  if (!g) return g.status().with_context(path);
  return g;
}

Expected<std::map<std::string, double>> parse_arm_output(const std::string& out, ParseMode mode,
                                                         json* engine) {
  std::map<std::string, double> m;
  if (mode == ParseMode::kNone) return m;
  if (mode == ParseMode::kLlamaBenchMd) {
    RETURN_IF_ERROR(from_markdown(out, m));
    return m;
  }
  const json j = first_json(out);
  if (j.is_discarded() || j.is_null()) {
    if (mode == ParseMode::kAuto) {
      RETURN_IF_ERROR(from_markdown(out, m));
      return m;
    }
    return Status::invalid_format("no JSON in the arm's output");
  }
  if (j.is_array() || mode == ParseMode::kLlamaBenchJson) {
    from_bench_records(j.is_array() ? j : json::array({j}), m, engine);
    if (m.empty())
      return Status::invalid_format("no llama-bench records (avg_ts) in the arm's output");
    return m;
  }
  flatten(j, "", m);
  return m;
}

bool lower_is_better(const std::string& metric, std::string* why) {
  std::string n = metric;
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  auto ends = [&](const std::string& s) {
    return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0;
  };
  auto say = [&](const std::string& w) {
    if (why) *why = w;
  };
  // Rates first: "throughput_tok_s" ends in "_s" but is tokens per second.
  for (const char* s :
       {"tok_s", "tokens_per_s", "per_s", "/s", "throughput", "gbps", "fraction", "speedup"})
    if (has(s)) return say(std::string("a rate (\"") + s + "\"): higher is better"), false;
  if (ends("_ts")) return say("tokens per second (\"_ts\"): higher is better"), false;
  for (const char* s : {"ms", "latency", "ttft", "itl", "ttfa", "time", "wall", "seconds", "bytes",
                        "rss", "mib", "error", "rtf", "underrun"})
    if (has(s)) return say(std::string("a cost (\"") + s + "\"): lower is better"), true;
  if (ends("_s") || ends("_us") || ends("_ns")) return say("a duration: lower is better"), true;
  say("no rule matched: assumed higher is better");
  return false;
}

std::vector<size_t> pass_order(size_t n_arms, int pass) {
  std::vector<size_t> order;
  for (size_t i = 0; i < n_arms; ++i) order.push_back((static_cast<size_t>(pass) + i) % n_arms);
  return order;
}

}  // namespace edge
