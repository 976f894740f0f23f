// A CpuInfo with exactly the given features: the dispatch tests ask isa.h's decisions
// about CPU classes they do not run on.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/cpu_info.h"

namespace edge {

inline CpuInfo cpu_with(std::vector<std::string> features) {
  CpuInfo c;
  c.features = std::move(features);
  return c;
}

}  // namespace edge
