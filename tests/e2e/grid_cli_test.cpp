// `edge-infer grid` end to end: two bench arms on the built-in demo model, in passes, with
// the roofline in the records and in the summary, provenance from the engine, and the SVG
// charts opened in headless Chromium (tests/e2e/grid_plot.mjs) with a screenshot saved
// under the build folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "server_process.h"

namespace edge::e2e {
namespace {

namespace fs = std::filesystem;

// edge-infer grid GRID writing dir/result.json and dir/plots. --allow-noisy: CI machines
// are shared; the records carry the load instead.
CommandResult run_grid_cli(const fs::path& dir, const std::string& grid) {
  return run_command(std::string(EDGE_BINARY) + " grid '" + grid + "' --out '" +
                     (dir / "result.json").string() + "' --plots '" + (dir / "plots").string() +
                     "' --allow-noisy --lock-file '" + (dir / "lock").string() + "' -q");
}

TEST(GridCliTest, BenchArmsWithRooflineAndChartsThatRender) {
  const fs::path dir = fs::path(testing::TempDir()) / ("edge_grid_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string grid = (dir / "grid.yaml").string();
  std::ofstream(grid)
      << "name: e2e\npasses: 2\npreflight_s: 0.1\ntimeout_s: 120\narms:\n"
         "  - name: one-thread\n"
         "    bench: {p: 8, n: 4, r: 1, t: 1, args: [--roofline-bytes, '4194304']}\n"
         "  - name: same-again\n"
         "    bench: {p: 8, n: 4, r: 1, t: 1, args: [--roofline-bytes, '4194304']}\n";
  const std::string out = (dir / "result.json").string(), plots = (dir / "plots").string();
  const CommandResult r = run_grid_cli(dir, grid);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("tg4_fraction_of_ceiling"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("roofline: one-thread tg4 decode at"), std::string::npos) << r.out;
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
  const std::string shot =
      fs::path(EDGE_BINARY).parent_path().string() + "/grid-plot-screenshot.png";
  const CommandResult node = run_node("grid_plot.mjs", svg, "'" + shot + "' tg4_ts");
  EXPECT_EQ(node.code, 0) << node.out;
  EXPECT_TRUE(fs::exists(shot));
  fs::remove_all(dir);
}

// A serving arm: our server on a tiny random model, started, loaded at 1 and 2 streams by the
// grid's own client, stopped and reaped; TTFT and ITL from the SSE chunks.
TEST(GridCliTest, ServeArmMeasuresTtftItlAndThroughput) {
  const fs::path dir =
      fs::path(testing::TempDir()) / ("edge_grid_serve_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string model = (dir / "tiny.gguf").string(), grid = (dir / "grid.yaml").string();
  ASSERT_EQ(run_command(std::string(EDGE_BINARY) +
                        " make-model --arch llama --layers 2 --dim 64 --heads 2 "
                        "--kv-heads 1 --ffn 128 --vocab 512 --type f32 -o '" +
                        model + "'")
                .code,
            0);
  std::ofstream(grid)
      << "passes: 1\npreflight_s: 0.1\narms:\n"
         "  - name: edge\n"
         "    model: '"
      << model
      << "'\n"
         "    serve: {command: ['{edge}', serve, -m, '"
      << model
      << "', --port, '{port}', -t, '1'],\n"
         "            streams: [1, 2], requests: 2, max_tokens: 4, prompt_words: 8}\n";
  const std::string out = (dir / "result.json").string(), plots = (dir / "plots").string();
  const CommandResult r = run_grid_cli(dir, grid);
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json doc;
  std::ifstream(out) >> doc;
  const auto& run = doc["runs"][0];
  ASSERT_TRUE(run["ok"].get<bool>()) << run.dump();
  for (const char* m : {"c1_ttft_ms_p50", "c2_ttft_ms_p99", "c2_itl_ms_p50", "c2_itl_ms_p99",
                        "c2_throughput_tok_s"})
    EXPECT_GT(run["metrics"][m].get<double>(), 0.0) << m;
  EXPECT_EQ(run["metrics"]["c2_errors"], 0);
  const auto& level = run["serve"]["levels"][1];
  EXPECT_EQ(level["streams"], 2);
  EXPECT_EQ(level["ttft_ms"].size(), 2u);
  EXPECT_EQ(level["itl_ms"].size(), 6u);          // 2 requests x (4 tokens - 1) gaps
  EXPECT_EQ(run["serve"]["stopped"], "SIGTERM");  // stopped by the grid, not killed
  EXPECT_EQ(run["provenance"]["model_sha256"].get<std::string>().size(), 64u);
  EXPECT_TRUE(fs::exists(plots + "/serve-c2-ttft.svg"));
  EXPECT_TRUE(fs::exists(plots + "/serve-c2-itl.svg"));
  EXPECT_GT(run["metrics"]["peak_rss_anon_mib"].get<double>(), 0.0);  // the server's tree, sampled
  EXPECT_FALSE(run["rss_mib"].empty());
  EXPECT_TRUE(fs::exists(plots + "/rss.svg"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace edge::e2e
