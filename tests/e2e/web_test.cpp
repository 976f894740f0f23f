// The chat page served by `edge-infer serve` (the built-in demo model, no -m) with an API
// key, driven in headless Chromium by tests/e2e/web_chat.mjs: key prompt, a streamed reply,
// stop mid-stream with the cancel seen in /metrics, reload with the conversation kept, the
// status panel; it fails on any request to a host other than loopback. The screenshots of
// each state are kept under <build dir>/test-artifacts/web/.
#include <gtest/gtest.h>

#include <filesystem>

#include "server_process.h"
#include "test_support.h"

namespace edge::e2e {
namespace {

bool have_browser() {
  return std::filesystem::exists("/usr/bin/chromium") &&
         std::filesystem::exists(std::string(EDGE_TEST_NODE_DIR) +
                                 "/node_modules/playwright-core/package.json") &&
         std::system("node --version > /dev/null 2>&1") == 0;
}

TEST(WebE2E, ChatPageInChromium) {
  if (!have_browser())
    EDGE_SKIP_UNLESS_REQUIRED("chromium, node or playwright-core (tests/node) is missing");
  ServerProcess server;
  ASSERT_TRUE(server.start("", {"--api-key", "web-test-key", "--threads", "1"}));
  const std::string shots =
      std::filesystem::path(EDGE_BINARY).parent_path().string() + "/test-artifacts/web";
  std::filesystem::remove_all(shots);  // only this run's screenshots
  const CommandResult r = run_node("web_chat.mjs", server.url(), "'" + shots + "' web-test-key");
  EXPECT_EQ(r.code, 0) << r.out << "\n--- server log ---\n" << server.log();
  for (const char* name : {"1-key-prompt.png", "2-streamed.png", "3-stopped.png",
                           "4-reloaded-status.png", "5-rendering-media.png", "6-real-image.png"})
    EXPECT_TRUE(std::filesystem::exists(shots + "/" + name)) << name;
  EXPECT_TRUE(server.alive()) << server.log();
  EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace edge::e2e
