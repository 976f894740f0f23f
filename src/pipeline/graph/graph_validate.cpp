// validate_pipeline and the stage order: the checks a pipeline passes before anything is
// reserved or started. Every message names the route (both ends) or the stage and port.
#include <fmt/format.h>

#include <map>
#include <set>

#include "pipeline/graph/graph.h"
#include "pipeline/graph/stage_kind.h"

namespace edge::pipeline {

namespace {

// The kinds another runtime serves ("external"): such a kind and placement external go
// together.
std::string external_kind_names() {
  std::vector<std::string> names;
  for (const StageKind* k : stage_kinds())
    if (k->runs_in(Placement::kExternal)) names.push_back(k->name);
  return join_with_and(names);
}

// server_flavour and server_args describe the process of an external stage; the pipeline
// itself sets the model, host and port it talks to.
Status check_server_fields(const StageSpec& s) {
  if (s.placement != Placement::kExternal && (!s.server_flavour.empty() || !s.server_args.empty()))
    return Status::invalid_argument(fmt::format(
        "stage '{}': server_flavour and server_args apply to external stages only", s.name));
  if (!s.server_flavour.empty() && s.server_flavour != "edge-infer" &&
      s.server_flavour != "llama-server")
    return Status::invalid_argument(
        fmt::format("stage '{}': server_flavour '{}' is not one of edge-infer, llama-server",
                    s.name, s.server_flavour));
  for (const std::string& a : s.server_args) {
    const std::string flag = a.substr(0, a.find('='));
    if (flag == "-m" || flag == "--model" || flag == "--host" || flag == "--port")
      return Status::invalid_argument(fmt::format(
          "stage '{}': server_args may not set {} (the pipeline sets the model, host and port)",
          s.name, flag));
  }
  return Status();
}

Status check_stages(const PipelineSpec& p) {
  std::set<std::string> names;
  for (const StageSpec& s : p.stages) {
    if (!names.insert(s.name).second)
      return Status::invalid_argument(fmt::format("two stages are named '{}'", s.name));
    if (!find_contract(s.contract))
      return Status::unsupported(
          fmt::format("stage '{}': unknown contract {}", s.name, s.contract.str()));
    if (!s.kind) return Status::invalid_argument(fmt::format("stage '{}': no kind", s.name));
    if (!s.kind->implements(s.contract))
      return Status::invalid_argument(fmt::format("stage '{}': a {} stage does not implement {}",
                                                  s.name, s.kind->name, s.contract.str()));
    const bool served_elsewhere = s.kind->runs_in(Placement::kExternal);
    if (served_elsewhere != (s.placement == Placement::kExternal))
      return Status::invalid_argument(fmt::format(
          "stage '{}': kind {} and placement external go together (kind {}, placement {})", s.name,
          external_kind_names(), s.kind->name, placement_name(s.placement)));
    if (served_elsewhere && s.backend.empty())
      return Status::invalid_argument(
          fmt::format("stage '{}': an external stage names its backend", s.name));
    RETURN_IF_ERROR(check_server_fields(s));
  }
  return Status();
}

// The port a route end names, or an error naming the route.
Expected<const PortSpec*> resolve(const PipelineSpec& p, const Route& r, bool source) {
  const Endpoint& e = source ? r.from : r.to;
  const StageSpec* s = p.stage(e.stage);
  if (!s) return Status::invalid_argument(fmt::format("route {}: no stage '{}'", r.str(), e.stage));
  const Contract* c = find_contract(s->contract);
  const PortSpec* port = source ? c->output(e.port) : c->input(e.port);
  if (!port)
    return Status::invalid_argument(fmt::format("route {}: stage '{}' ({}) has no {} '{}'", r.str(),
                                                e.stage, s->contract.str(),
                                                source ? "output" : "input", e.port));
  return port;
}

Status check_routes(const PipelineSpec& p) {
  std::map<std::string, std::string> fed;  // "stage.port" input -> the route feeding it
  std::map<std::string, std::pair<const PortSpec*, std::string>> graph_inputs;  // first consumer
  std::set<std::string> graph_outputs;
  for (const Route& r : p.routes) {
    if (r.to.stage == "input" || r.from.stage == "output")
      return Status::invalid_argument(fmt::format(
          "route {}: the graph's input only feeds and its output only receives", r.str()));
    if (r.from.stage == "input" && r.to.stage == "output")
      return Status::invalid_argument(fmt::format("route {}: connects no stage", r.str()));
    const PortSpec* out = nullptr;
    const PortSpec* in = nullptr;
    if (r.from.stage != "input") {
      ASSIGN_OR_RETURN(out, resolve(p, r, true));
    }
    if (r.to.stage != "output") {
      ASSIGN_OR_RETURN(in, resolve(p, r, false));
    }
    if (out && in) {
      const std::string why = port_mismatch(*out, *in);
      if (!why.empty())
        return Status::invalid_argument(fmt::format("route {}: ports differ: {}", r.str(), why));
    }
    if (r.from.stage == "input" && in) {
      // One graph input may feed several ports, all of one type (it has no spec of its own).
      auto [it, first] = graph_inputs.emplace(r.from.port, std::make_pair(in, r.to.str()));
      const std::string why = first ? "" : port_mismatch(*it->second.first, *in);
      if (!why.empty())
        return Status::invalid_argument(
            fmt::format("route {}: graph input '{}' already feeds {}: {}", r.str(), r.from.port,
                        it->second.second, why));
    }
    if (r.to.stage == "output" && !graph_outputs.insert(r.to.port).second)
      return Status::invalid_argument(
          fmt::format("route {}: graph output '{}' is fed twice", r.str(), r.to.port));
    if (in) {
      auto [it, fresh] = fed.emplace(r.to.str(), r.str());
      if (!fresh)
        return Status::invalid_argument(fmt::format("input {} is fed by two routes: {} and {}",
                                                    r.to.str(), it->second, r.str()));
    }
  }
  for (const StageSpec& s : p.stages)
    for (const PortSpec& in : find_contract(s.contract)->inputs)
      if (in.required && !fed.count(s.name + "." + in.name))
        return Status::invalid_argument(fmt::format(
            "stage '{}' ({}): required input '{}' is not routed (nothing is routed by default)",
            s.name, s.contract.str(), in.name));
  if (graph_outputs.empty())
    return Status::invalid_argument("no route reaches the graph's output (output.NAME)");
  return Status();
}

}  // namespace

std::vector<const StageSpec*> PipelineSpec::topological_order() const {
  std::map<std::string, int> pending;  // stage -> inputs from stages not yet placed
  for (const StageSpec& s : stages) pending[s.name] = 0;
  for (const Route& r : routes)
    if (pending.count(r.from.stage) && pending.count(r.to.stage)) ++pending[r.to.stage];
  std::vector<const StageSpec*> order;
  for (bool progress = true; progress;) {
    progress = false;
    for (const StageSpec& s : stages) {
      if (pending[s.name] != 0) continue;
      pending[s.name] = -1;
      order.push_back(&s);
      progress = true;
      for (const Route& r : routes)
        if (r.from.stage == s.name && pending.count(r.to.stage) && pending[r.to.stage] > 0)
          --pending[r.to.stage];
    }
  }
  return order;  // shorter than stages when they form a cycle
}

Status validate_pipeline(const PipelineSpec& p) {
  RETURN_IF_ERROR(check_stages(p));
  RETURN_IF_ERROR(check_routes(p));
  if (p.topological_order().size() != p.stages.size()) {
    std::string cyc;
    for (const Route& r : p.routes) {
      if (r.from.stage == "input" || r.to.stage == "output") continue;
      bool placed = false;
      for (const StageSpec* s : p.topological_order()) placed |= s->name == r.from.stage;
      if (!placed) cyc += (cyc.empty() ? "" : ", ") + r.str();
    }
    return Status::invalid_argument("routes form a cycle: " + cyc);
  }
  return Status();
}

}  // namespace edge::pipeline
