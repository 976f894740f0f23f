// `edge-infer grid` end to end: two bench arms on the built-in demo model, in passes, with
// the roofline in the records and in the summary, provenance from the engine, and the SVG
// charts opened in headless Chromium (tests/e2e/grid_plot.mjs) with a screenshot saved
// under the build folder.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server_process.h"

namespace edge::e2e {
namespace {

namespace fs = std::filesystem;

TEST(GridCliTest, BenchArmsWithRooflineAndChartsThatRender) {
  const fs::path dir = fs::path(testing::TempDir()) / ("edge_grid_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string grid = (dir / "grid.yaml").string();
  std::ofstream(grid) << "name: e2e\npasses: 2\npreflight_s: 0.1\ntimeout_s: 120\narms:\n"
                         "  - name: one-thread\n"
                         "    bench: {p: 8, n: 4, r: 1, t: 1, args: [--roofline-bytes, '4194304']}\n"
                         "  - name: same-again\n"
                         "    bench: {p: 8, n: 4, r: 1, t: 1, args: [--roofline-bytes, '4194304']}\n";
  const std::string out = (dir / "result.json").string(), plots = (dir / "plots").string();
  // --allow-noisy: CI machines are shared; the records carry the load instead.
  const CommandResult r = run_command(std::string(EDGE_BINARY) + " grid '" + grid + "' --out '" + out +
                                      "' --plots '" + plots + "' --allow-noisy --lock-file '" +
                                      (dir / "lock").string() + "' -q");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("tg4_fraction_of_ceiling"), std::string::npos) << r.out;
  nlohmann::json doc;
  std::ifstream(out) >> doc;
  ASSERT_EQ(doc["runs"].size(), 4u);
  EXPECT_EQ(doc["runs"][2]["arm"], "same-again");  // pass 1 starts at the second arm
  for (const auto& run : doc["runs"]) {
    ASSERT_TRUE(run["ok"].get<bool>()) << run.dump();
    EXPECT_TRUE(run["metrics"].contains("tg4_fraction_of_ceiling"));
    EXPECT_TRUE(run["metrics"].contains("pp8_ts"));
    EXPECT_NE(run["provenance"]["kernel_path"], "unknown");  // read back from the engine
    EXPECT_EQ(run["provenance"]["threads"], 1);
    EXPECT_TRUE(run["preflight"].contains("busy_per_core"));
  }
  const auto& m = doc["summary"]["metrics"]["tg4_ts"];
  EXPECT_EQ(m["direction"], "higher is better");
  ASSERT_EQ(m["comparisons"].size(), 1u);
  ASSERT_TRUE(doc.contains("plots")) << doc.value("plots_error", std::string());
  const std::string svg = plots + "/metric-tg4_ts.svg";
  ASSERT_TRUE(fs::exists(svg));
  const std::string shot = fs::path(EDGE_BINARY).parent_path().string() + "/grid-plot-screenshot.png";
  const CommandResult node = run_node("grid_plot.mjs", svg, "'" + shot + "' tg4_ts");
  EXPECT_EQ(node.code, 0) << node.out;
  EXPECT_TRUE(fs::exists(shot));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace edge::e2e
