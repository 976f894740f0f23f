// Lookups over the stage-kind table (stage_kind.h); the table itself is
// stages/stage_kinds.cpp.
#include "pipeline/graph/stage_kind.h"

#include <fmt/format.h>

#include <algorithm>

namespace edge::pipeline {

bool StageKind::implements(const ContractRef& ref) const {
  if (contract == nullptr) return true;
  return ref.name == contract && ref.version >= min_version && ref.version <= max_version;
}

bool StageKind::runs_in(Placement p) const {
  switch (p) {
    case Placement::kInProcess:
      return start != nullptr;
    case Placement::kWorker:
      return start_in_worker != nullptr;
    case Placement::kExternal:
      return start_external != nullptr;
  }
  return false;
}

const StageKind* find_stage_kind(const std::string& name) {
  for (const StageKind* k : stage_kinds())
    if (name == k->name) return k;
  return nullptr;
}

std::string stage_kind_names() {
  std::string names;
  for (const StageKind* k : stage_kinds())
    names += names.empty() ? k->name : fmt::format(", {}", k->name);
  return names;
}

const StageKind* worker_stage_kind(const ContractRef& ref) {
  for (const StageKind* k : stage_kinds())
    if (k->start_in_worker && k->contract && k->implements(ref)) return k;
  return nullptr;
}

std::string join_with_and(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  return out;
}

std::string stage_kind_placements() {
  // Kinds grouped by the placements they run in, in table order of each group's first kind.
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const StageKind* k : stage_kinds()) {
    std::vector<std::string> where;
    if (k->runs_in(Placement::kInProcess)) where.push_back("in process");
    if (k->runs_in(Placement::kWorker)) where.push_back("in a worker");
    if (k->runs_in(Placement::kExternal)) where.push_back("placed external");
    if (where.empty()) continue;
    std::string phrase;
    for (const std::string& w : where) phrase += (phrase.empty() ? "" : " or ") + w;
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const auto& x) { return x.first == phrase; });
    if (g == groups.end()) g = groups.insert(groups.end(), {phrase, {}});
    g->second.push_back(k->name);
  }
  std::vector<std::string> parts;
  for (const auto& [where, kinds] : groups)
    parts.push_back(fmt::format("{} stages {}", join_with_and(kinds), where));
  return join_with_and(parts);
}

}  // namespace edge::pipeline
