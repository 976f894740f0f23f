#include "pipeline/graph/graph.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/memory_ledger.h"
#include "pipeline/graph/artifact.h"
#include "pipeline/graph/stage_kind.h"

namespace edge::pipeline {

const char* device_class_name(DeviceClass d) {
  return d == DeviceClass::kCpu ? "cpu" : d == DeviceClass::kIgpu ? "igpu" : "npu";
}

const char* placement_name(Placement p) {
  return p == Placement::kInProcess ? "in_process"
         : p == Placement::kWorker  ? "worker"
                                    : "external";
}

const char* placement_policy_name(PlacementPolicy p) {
  return p == PlacementPolicy::kRequire ? "require" : "prefer";
}

const StageSpec* PipelineSpec::stage(const std::string& n) const {
  for (const StageSpec& s : stages)
    if (s.name == n) return &s;
  return nullptr;
}

namespace {

constexpr size_t kMaxPipelineBytes = 1 << 20;
constexpr size_t kMaxStages = 64, kMaxRoutes = 256, kMaxArtifacts = 16, kMaxServerArgs = 64;

template <typename E>
Expected<E> parse_enum(const std::string& what, const std::string& v,
                       std::initializer_list<std::pair<const char*, E>> names) {
  std::string known;
  for (const auto& [n, e] : names) {
    if (v == n) return e;
    known += known.empty() ? n : fmt::format(", {}", n);
  }
  return Status::invalid_argument(fmt::format("{} '{}' is not one of {}", what, v, known));
}

std::string scalar(const YAML::Node& n, const char* key, const std::string& def = "") {
  const YAML::Node v = n[key];
  if (!v) return def;
  if (!v.IsScalar()) throw YAML::Exception(v.Mark(), fmt::format("'{}' must be a scalar", key));
  return v.as<std::string>();
}

Expected<Artifact> parse_artifact(const YAML::Node& n, const std::string& stage) {
  if (!n.IsMap())
    return Status::invalid_argument(fmt::format("stage '{}': an artifact must be a map", stage));
  Artifact a{scalar(n, "role", "model"), scalar(n, "path"), scalar(n, "sha256")};
  if (a.path.empty())
    return Status::invalid_argument(fmt::format("stage '{}': artifact without a path", stage));
  if (is_symbolic_path(a.path)) {  // "demo:lm": resolved and pinned here (artifact.h)
    RETURN_IF_ERROR(resolve_symbolic_artifact(&a).with_context(fmt::format("stage '{}'", stage)));
    return a;
  }
  bool hex = a.sha256.size() == 64;
  for (char c : a.sha256) hex = hex && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  if (!hex)
    return Status::invalid_argument(fmt::format(
        "stage '{}': artifact {} needs a pinned sha256 (64 lowercase hex digits)", stage, a.path));
  return a;
}

Status parse_engine_settings(const YAML::Node& n, EngineSettings& e, VocoderSettings& v) {
  auto integer = [&](const char* key, int64_t lo, int64_t hi, int64_t& out) {
    const std::string v = scalar(n, key);
    if (v.empty()) return Status();
    char* end = nullptr;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (*end != '\0' || x < lo || x > hi)
      return Status::invalid_argument(
          fmt::format("{} '{}' must be an integer in {}..{}", key, v, lo, hi));
    out = x;
    return Status();
  };
  RETURN_IF_ERROR(integer("ctx", 1, int64_t{1} << 26, e.ctx));
  int64_t window = 0, context = 0, lookahead = 0;
  RETURN_IF_ERROR(integer("window", 0, 1 << 16, window));
  RETURN_IF_ERROR(integer("context", 0, 1 << 16, context));
  RETURN_IF_ERROR(integer("lookahead", 0, 1 << 16, lookahead));
  v = VocoderSettings{static_cast<int32_t>(window), static_cast<int32_t>(context),
                      static_cast<int32_t>(lookahead)};
  RETURN_IF_ERROR(integer("max_batched_tokens", 1, 1 << 20, e.max_batched_tokens));
  e.kv_type = scalar(n, "kv_type", e.kv_type);
  e.kv_type_v = scalar(n, "kv_type_v", e.kv_type_v);
  if (auto t = parse_kv_types(e.kv_type, e.kv_type_v); !t) return t.status();
  const std::string itl = scalar(n, "itl_target_ms");
  if (!itl.empty()) {
    char* end = nullptr;
    e.itl_target_ms = std::strtod(itl.c_str(), &end);
    if (*end != '\0' || !(e.itl_target_ms > -1e9 && e.itl_target_ms < 1e9))
      return Status::invalid_argument(fmt::format("itl_target_ms '{}' must be a number", itl));
  }
  e.speculative = scalar(n, "speculative");
  if (!e.speculative.empty() && e.speculative != "ngram" && e.speculative != "draft")
    return Status::invalid_argument(
        fmt::format("speculative '{}' is not ngram or draft (or absent: none)", e.speculative));
  e.draft_model = scalar(n, "draft_model");
  if ((e.speculative == "draft") != !e.draft_model.empty())
    return Status::invalid_argument(e.draft_model.empty()
                                        ? "speculative 'draft' needs draft_model (a path)"
                                        : "draft_model is given but speculative is not 'draft'");
  int64_t draft_max = e.draft_max;
  RETURN_IF_ERROR(integer("draft_max", 1, 16, draft_max));
  e.draft_max = static_cast<int32_t>(draft_max);
  e.media_begin = scalar(n, "media_begin");
  e.media_end = scalar(n, "media_end");
  const std::string prefix = scalar(n, "prefix_cache", "true");
  if (prefix != "true" && prefix != "false")
    return Status::invalid_argument(fmt::format("prefix_cache '{}' must be true or false", prefix));
  e.prefix_cache = prefix == "true";
  const std::string checkpoints = scalar(n, "state_checkpoints");
  if (!checkpoints.empty()) {
    char* end = nullptr;
    const long v = std::strtol(checkpoints.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v > 4096)
      return Status::invalid_argument(
          fmt::format("state_checkpoints '{}' must be a count from 0 to 4096", checkpoints));
    e.state_checkpoints = static_cast<int32_t>(v);
  }
  const std::string budget = scalar(n, "kv_budget");
  if (!budget.empty()) {
    auto bytes = parse_byte_size(budget);
    if (!bytes) return bytes.status().with_context("kv_budget");
    e.kv_budget_bytes = *bytes;
  }
  return Status();
}

Expected<StageSpec> parse_stage(const YAML::Node& n) {
  if (!n.IsMap()) return Status::invalid_argument("a stage must be a map");
  StageSpec s;
  s.name = scalar(n, "name");
  if (s.name.empty() || s.name == "input" || s.name == "output" ||
      s.name.find_first_of(". ") != std::string::npos)
    return Status::invalid_argument(fmt::format(
        "stage name '{}' must be non-empty, without '.' or spaces, and not input/output", s.name));
  auto ctx = [&](Status st) { return st.with_context("stage '" + s.name + "'"); };
  const std::string kind = scalar(n, "kind");
  s.kind = find_stage_kind(kind);
  if (!s.kind)
    return ctx(Status::invalid_argument(
        fmt::format("kind '{}' is not one of {}", kind, stage_kind_names())));
  auto ref = parse_contract_ref(scalar(n, "contract"));
  if (!ref) return ctx(ref.status());
  s.contract = *ref;
  auto dev = parse_enum<DeviceClass>(
      "device", scalar(n, "device", "cpu"),
      {{"cpu", DeviceClass::kCpu}, {"igpu", DeviceClass::kIgpu}, {"npu", DeviceClass::kNpu}});
  if (!dev) return ctx(dev.status());
  s.device = *dev;
  auto pl = parse_enum<Placement>("placement", scalar(n, "placement", "in_process"),
                                  {{"in_process", Placement::kInProcess},
                                   {"worker", Placement::kWorker},
                                   {"external", Placement::kExternal}});
  if (!pl) return ctx(pl.status());
  s.placement = *pl;
  auto policy = parse_enum<PlacementPolicy>(
      "placement_policy", scalar(n, "placement_policy", "require"),
      {{"require", PlacementPolicy::kRequire}, {"prefer", PlacementPolicy::kPrefer}});
  if (!policy) return ctx(policy.status());
  s.placement_policy = *policy;
  s.backend = scalar(n, "backend");
  s.server_flavour = scalar(n, "server_flavour");
  if (const YAML::Node args = n["server_args"]) {
    if (!args.IsSequence() || args.size() > kMaxServerArgs)
      return ctx(Status::invalid_argument(
          fmt::format("server_args must be a list of at most {} strings", kMaxServerArgs)));
    for (const YAML::Node& a : args) {
      if (!a.IsScalar()) return ctx(Status::invalid_argument("server_args must be strings"));
      s.server_args.push_back(a.as<std::string>());
    }
  }
  if (const YAML::Node arts = n["artifacts"]) {
    if (!arts.IsSequence() || arts.size() > kMaxArtifacts)
      return ctx(Status::invalid_argument(
          fmt::format("artifacts must be a list of at most {}", kMaxArtifacts)));
    for (const YAML::Node& a : arts) {
      auto art = parse_artifact(a, s.name);
      if (!art) return art.status();
      s.artifacts.push_back(*art);
    }
  }
  const std::string cap = scalar(n, "capacity", "1");
  char* end = nullptr;
  const long c = std::strtol(cap.c_str(), &end, 10);
  if (cap.empty() || *end != '\0' || c < 1 || c > 4096)
    return ctx(
        Status::invalid_argument(fmt::format("capacity '{}' must be an integer in 1..4096", cap)));
  s.capacity = static_cast<int32_t>(c);
  RETURN_IF_ERROR(
      parse_engine_settings(n, s.engine, s.vocoder).with_context("stage '" + s.name + "'"));
  const std::string res = scalar(n, "reservation", "plan");
  if (res != "plan") {
    auto bytes = parse_byte_size(res);
    if (!bytes) return ctx(bytes.status().with_context("reservation"));
    s.reservation_bytes = *bytes;
  }
  return s;
}

Expected<Endpoint> parse_endpoint(const std::string& text, const std::string& route) {
  std::string t = text;
  while (!t.empty() && t.front() == ' ') t.erase(t.begin());
  while (!t.empty() && t.back() == ' ') t.pop_back();
  const size_t dot = t.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == t.size() ||
      t.find(' ') != std::string::npos)
    return Status::invalid_argument(fmt::format("route '{}': '{}' is not stage.port", route, t));
  return Endpoint{t.substr(0, dot), t.substr(dot + 1)};
}

Expected<Route> parse_route(const YAML::Node& n) {
  if (!n.IsScalar())
    return Status::invalid_argument("a route must be a string 'stage.port -> stage.port'");
  const std::string text = n.as<std::string>();
  const size_t arrow = text.find("->");
  if (arrow == std::string::npos)
    return Status::invalid_argument(fmt::format("route '{}' has no '->'", text));
  ASSIGN_OR_RETURN(Endpoint from, parse_endpoint(text.substr(0, arrow), text));
  ASSIGN_OR_RETURN(Endpoint to, parse_endpoint(text.substr(arrow + 2), text));
  return Route{from, to};
}

Expected<PipelineSpec> parse_yaml(const YAML::Node& root, const std::string& base_dir) {
  if (!root.IsMap())
    return Status::invalid_argument("a pipeline file must be a map with stages and routes");
  PipelineSpec p;
  p.name = scalar(root, "pipeline", "pipeline");
  p.base_dir = base_dir;
  const YAML::Node stages = root["stages"], routes = root["routes"];
  if (!stages || !stages.IsSequence() || stages.size() == 0 || stages.size() > kMaxStages)
    return Status::invalid_argument(
        fmt::format("'stages' must be a list of 1..{} stages", kMaxStages));
  if (!routes || !routes.IsSequence() || routes.size() > kMaxRoutes)
    return Status::invalid_argument(fmt::format(
        "'routes' must be a list of at most {} routes (nothing is routed by default)", kMaxRoutes));
  for (const YAML::Node& s : stages) {
    ASSIGN_OR_RETURN(StageSpec st, parse_stage(s));
    // A draft model's path is relative to the pipeline file, as artifacts are.
    std::string& draft = st.engine.draft_model;
    if (!draft.empty() && draft[0] != '/' && !base_dir.empty())
      draft = (std::filesystem::path(base_dir) / draft).string();
    p.stages.push_back(std::move(st));
  }
  for (const YAML::Node& r : routes) {
    ASSIGN_OR_RETURN(Route rt, parse_route(r));
    p.routes.push_back(std::move(rt));
  }
  return p;
}

// yaml-cpp parses nesting recursively: a file of "[[[[..." or ever deeper indentation would
// overflow the stack before it reported anything. Pipelines are shallow; bound the depth.
Status check_nesting(const std::string& text) {
  int depth = 0;
  char quote = 0;
  size_t indent = 0;
  bool line_start = true;
  for (char c : text) {
    if (c == '\n') {
      line_start = true, indent = 0;
      continue;
    }
    if (line_start && c == ' ') {
      if (++indent > 256)
        return Status::invalid_format("pipeline file: indentation deeper than 256 columns");
      continue;
    }
    line_start = false;
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{') {
      if (++depth > 64)
        return Status::invalid_format("pipeline file: nested deeper than 64 levels");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return Status();
}

}  // namespace

Expected<PipelineSpec> parse_pipeline(const std::string& text, const std::string& base_dir) {
  if (text.size() > kMaxPipelineBytes)
    return Status::invalid_argument(
        fmt::format("pipeline file is {} bytes (at most {})", text.size(), kMaxPipelineBytes));
  RETURN_IF_ERROR(check_nesting(text));
  Expected<PipelineSpec> p = Status::internal("unparsed");
  try {
    p = parse_yaml(YAML::Load(text), base_dir);
  } catch (const YAML::Exception& e) {
    return Status::invalid_format(fmt::format("pipeline file: {}", e.what()));
  }
  if (!p) return p.status();
  RETURN_IF_ERROR(validate_pipeline(*p));
  return p;
}

Expected<PipelineSpec> load_pipeline_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found(path + ": cannot open the pipeline file");
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string dir = std::filesystem::absolute(path).parent_path().string();
  auto p = parse_pipeline(ss.str(), dir);
  if (!p) return p.status().with_context(path);
  return p;
}

}  // namespace edge::pipeline
