// Audio through the API: `edge-infer serve -m LM --mmproj P --max-audio-seconds 2` (P an
// audio-only projector; `--mmproj-audio` beside a vision one is what the demo uses)
// driven by the official openai npm client (tests/e2e/server_audio.mjs): an answer for an
// input_audio part, every bad-audio class a 400, and the server still serving.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server_process.h"
#include "test_support.h"

namespace edge::e2e {
namespace {

TEST(ServerAudio, OpenAIClientSendsAClipAndBadClips) {
  if (!have_node_openai())
    EDGE_SKIP_UNLESS_REQUIRED("node or the openai package (tests/node) is missing");
  ASSERT_FALSE(tiny_model().empty());
  const std::string proj = server_tmp_dir() + "/server_ultravox.gguf";
  ASSERT_EQ(run_command(std::string(EDGE_BINARY) +
                        " make-model --arch clip-ultravox --dim 32 --layers 1 "
                        "--heads 4 --proj-dim 64 -o " +
                        proj + " 2>&1")
                .code,
            0);
  ServerProcess server;
  ASSERT_TRUE(server.start(tiny_model(), {"--mmproj", proj, "--max-audio-seconds", "2"}));
  const CommandResult r = run_node("server_audio.mjs", server.url());
  EXPECT_EQ(r.code, 0) << r.out << "\n--- server log ---\n" << server.log();
  const nlohmann::json summary = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(summary.is_object()) << r.out;
  EXPECT_GT(summary["prompt_tokens"].get<int>(), 375);
  EXPECT_TRUE(server.alive()) << server.log();
  EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace edge::e2e
