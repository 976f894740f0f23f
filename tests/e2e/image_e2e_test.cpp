// Images end to end: `edge-infer serve` with no -m (the built-in demo model and its random
// gemma3 projector) driven by the official openai npm client (tests/e2e/server_image.mjs);
// a clean exit on SIGTERM.
#include <gtest/gtest.h>

#include "server_process.h"
#include "test_support.h"

namespace edge::e2e {
namespace {

TEST(ImageE2E, OpenAIClientSendsImagesToTheDemo) {
  if (!have_node_openai())
    EDGE_SKIP_UNLESS_REQUIRED("node or the openai package (tests/node) is missing");
  ServerProcess server;
  // No -m: the demo (its projector too); images over 200x200 pixels are refused.
  ASSERT_TRUE(server.start("", {"--max-image-pixels", "40000"}));
  const CommandResult r = run_node("server_image.mjs", server.url());
  EXPECT_EQ(r.code, 0) << r.out << "\n" << server.log();
  EXPECT_NE(r.out.find("\"cached_tokens\""), std::string::npos) << r.out;
  EXPECT_TRUE(server.alive()) << server.log();
  EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace edge::e2e
