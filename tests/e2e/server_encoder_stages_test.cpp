// serve --vision-placement: the demo's image parts answered through a vision.encode@1 graph
// stage (in a worker process, or in process) give exactly the reply of the encoder in the
// server's own pool; the stage's reservation is on the server's ledger; a worker shows as a
// child process; a broken image is still the client's 400 and the server keeps serving.
#include <gtest/gtest.h>
#include <png.h>

#include <nlohmann/json.hpp>

#include "e2e/server_process.h"

namespace edge::e2e {
namespace {

using nlohmann::json;

std::string png_data_uri() {
  std::vector<uint8_t> px(40 * 30 * 3);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i * 7 % 251);
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  img.width = 40, img.height = 30, img.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&img, nullptr, &size, 0, px.data(), 0, nullptr));
  std::string bytes(size, '\0');
  EXPECT_TRUE(png_image_write_to_memory(&img, bytes.data(), &size, 0, px.data(), 0, nullptr));
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 2]);
    b64 += k[v >> 18], b64 += k[(v >> 12) & 63];
    b64 += i + 1 < bytes.size() ? k[(v >> 6) & 63] : '=';
    b64 += i + 2 < bytes.size() ? k[v & 63] : '=';
  }
  return "data:image/png;base64," + b64;
}

struct Reply {
  std::string status, text;
};

Reply ask(ServerProcess& s, const std::string& image_url) {
  const json body = {{"model", "demo-llama-v1.gguf"},
                     {"max_tokens", 12},
                     {"temperature", 0},
                     {"messages",
                      {{{"role", "user"},
                        {"content",
                         {{{"type", "text"}, {"text", "What is in the picture?"}},
                          {{"type", "image_url"}, {"image_url", {{"url", image_url}}}}}}}}}};
  const std::string file = server_tmp_dir() + "/vision_stage_body.json";
  std::ofstream(file) << body.dump();
  const std::string out = server_tmp_dir() + "/vision_stage_reply.json";
  const CommandResult r = run_command("curl -sS -o " + out + " -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @" +
                                      file + " " + s.url() + "/v1/chat/completions");
  const json j = json::parse(read_file(out), nullptr, false);
  Reply reply{r.out, j.dump()};
  if (j.is_object() && j.contains("choices")) reply.text = j["choices"][0]["message"]["content"].get<std::string>();
  return reply;
}

double metric(ServerProcess& s, const std::string& name) {
  const std::string m = run_command("curl -sS " + s.url() + "/metrics").out;
  const size_t p = m.find("\n" + name + " ");
  return p == std::string::npos ? -1 : std::atof(m.c_str() + p + name.size() + 2);
}

TEST(ServerVisionStage, WorkerAndInProcessStagesAnswerLikeTheServersOwnEncoder) {
  setenv("XDG_CACHE_HOME", (server_tmp_dir() + "/cache").c_str(), 1);
  const std::string image = png_data_uri();
  std::string want;
  double base_reserved = 0;
  {
    ServerProcess s;
    ASSERT_TRUE(s.start("", {"-t", "1"}));
    const Reply r = ask(s, image);
    ASSERT_EQ(r.status, "200") << r.text;
    want = r.text;
    base_reserved = metric(s, "edge_ledger_reserved_bytes");
    EXPECT_EQ(s.stop(), 0) << s.log();
  }
  ASSERT_FALSE(want.empty());
  for (const char* placement : {"worker", "stage"}) {
    ServerProcess s;
    ASSERT_TRUE(s.start("", {"-t", "1", "--vision-placement", placement})) << placement;
    EXPECT_NE(s.log().find("images through the vision stage"), std::string::npos) << s.log();
    const Reply r = ask(s, image);
    ASSERT_EQ(r.status, "200") << placement << ": " << r.text;
    EXPECT_EQ(r.text, want) << placement;
    EXPECT_GT(metric(s, "edge_ledger_reserved_bytes"), base_reserved) << placement << ": the stage's reservation";
    const std::string children =
        run_command("pgrep -P " + std::to_string(s.pid()) + " -f ' worker --fd' | wc -l").out;
    EXPECT_EQ(std::atoi(children.c_str()), std::string(placement) == "worker" ? 1 : 0) << placement;
    const Reply bad = ask(s, "data:image/png;base64,iVBORw0KGgo=");  // a PNG signature and nothing else
    EXPECT_EQ(bad.status, "400") << bad.text;
    EXPECT_EQ(ask(s, image).text, want) << "the server keeps serving";
    EXPECT_EQ(s.stop(), 0) << s.log();
  }
}

}  // namespace
}  // namespace edge::e2e
