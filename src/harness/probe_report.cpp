#include <algorithm>

#include "harness/probe.h"

namespace edge {

bool ProbeReport::passed() const {
  return findings.empty() && std::none_of(checks.begin(), checks.end(),
                                          [](const ProbeCheck& c) { return c.result == "fail"; });
}

const ProbeCheck* ProbeReport::check(const std::string& name) const {
  for (const ProbeCheck& c : checks)
    if (c.name == name) return &c;
  return nullptr;
}

nlohmann::json ProbeReport::to_json() const {
  nlohmann::json checks_json = nlohmann::json::array();
  int failed = 0, skipped = 0;
  for (const ProbeCheck& c : checks) {
    checks_json.push_back({{"name", c.name},
                           {"result", c.result},
                           {"seconds", c.seconds},
                           {"detail", c.detail},
                           {"figures", c.figures}});
    failed += c.result == "fail", skipped += c.result == "skipped";
  }
  return {{"target", target},   {"passed", passed()},    {"failed", failed},
          {"skipped", skipped}, {"checks", checks_json}, {"findings", findings}};
}

}  // namespace edge
