// SVG charts of a grid result, drawn by gnuplot (run as an owned child with a generated
// script and data files): per metric the median of each arm with its min-max spread and
// the pass values; for serving arms the TTFT and inter-token latency distributions (CDF);
// RssAnon over time of each command arm (its last pass).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace edge {

// Writes dir/*.svg (and dir/data/ with the scripts and data) and returns the list of
// charts written ([{file, what}]). unavailable when gnuplot cannot be run.
Expected<nlohmann::json> write_grid_plots(const nlohmann::json& grid, const std::string& dir,
                                          const std::string& gnuplot);

}  // namespace edge
