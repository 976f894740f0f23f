// Images through /v1/chat/completions on a tiny Gemma-3-shaped model with a random gemma3
// projector: an image_url data: URI is answered, the same image again is a prefix-cache
// hit, and every class of bad media is a 400 naming the part and the problem (an http URL,
// bad base64, an unknown format, a truncated PNG, too many pixels, a kind without an
// encoder), after which the server still serves.
#include "server/media_request.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <png.h>

#include <csignal>
#include <filesystem>
#include <thread>

#include "convert/random_model.h"
#include "convert/random_vision_projector.h"
#include "model/model.h"
#include "server/http_server.h"
#include "server/speech_audio.h"

namespace edge::server {
namespace {

using nlohmann::json;

std::string png_bytes(int w, int h) {
  std::vector<uint8_t> px(static_cast<size_t>(w * h * 3));
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i * 7 % 251);
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  img.width = static_cast<uint32_t>(w);
  img.height = static_cast<uint32_t>(h);
  img.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&img, nullptr, &size, 0, px.data(), 0, nullptr));
  std::string out(size, '\0');
  EXPECT_TRUE(png_image_write_to_memory(&img, out.data(), &size, 0, px.data(), 0, nullptr));
  out.resize(size);
  return out;
}

std::string data_uri(const std::string& bytes, const std::string& mime = "image/png") {
  return "data:" + mime + ";base64," + base64(bytes);
}

TEST(MediaRequest, Base64AndPartsParse) {
  EXPECT_EQ(base64_decode("aGVsbG8="), "hello");
  EXPECT_EQ(base64_decode("aGVsbG8"), "hello");
  EXPECT_FALSE(base64_decode("aGV$bG8=").has_value());
  std::string text;
  std::vector<MediaInput> media;
  json part = {{"type", "image_url"}, {"image_url", {{"url", data_uri("xyz")}}}};
  ASSERT_FALSE(parse_media_part(part, "messages[0].content[1]", text, media).has_value());
  EXPECT_EQ(text, kMediaMarker);
  ASSERT_EQ(media.size(), 1u);
  EXPECT_EQ(media[0].bytes, "xyz");
  EXPECT_EQ(media[0].format, "png");
  EXPECT_EQ(media[0].param, "messages[0].content[1].image_url.url");
  part = {{"type", "video_url"}};
  auto e = parse_media_part(part, "p", text, media);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, "unsupported");
}

class MediaServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() /
           ("edge_media_server_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    RandomModelOptions o;
    o.arch = "gemma3";
    o.n_layer = 2;
    o.n_embd = 64;
    o.n_vocab = 512;
    ASSERT_TRUE(write_random_model(o, (dir_ / "lm.gguf").string()).ok());
    RandomVisionProjectorOptions p;  // 64x64, patch 4, pool 4: 16 tokens
    p.n_embd = 32;
    p.n_ff = 64;
    p.n_out = 64;
    ASSERT_TRUE(write_random_vision_projector(p, (dir_ / "mmproj.gguf").string()).ok());
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }

  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    EngineOptions eo;
    eo.model_path = (dir_ / "lm.gguf").string();
    eo.n_threads = 2;
    eo.max_model_len = 256;
    auto e = Engine::create(eo);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    engine_ = std::move(*e);
    ServerOptions so;
    so.port = 0;
    auto s = HttpServer::create(so);
    ASSERT_TRUE(s.ok());
    server_ = std::move(*s);
    auto media = load_media_encoders((dir_ / "mmproj.gguf").string(), 2, 64);
    ASSERT_TRUE(media.ok()) << media.status().to_string();
    (*media)->image_limits.max_pixels = 200 * 200;
    media_ = *media;
    ASSERT_TRUE(server_->attach_media(*media).ok());
    ASSERT_TRUE(server_->attach(*engine_).ok());
    ASSERT_TRUE(server_->bind().ok());
    thread_ = std::thread([this] { (void)server_->run(); });
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  // POST a user message of [text, part]; returns (status, body).
  std::pair<int, json> chat(const json& part) {
    json body = {
        {"messages",
         json::array(
             {{{"role", "user"},
               {"content", json::array({{{"type", "text"}, {"text", "what colour?"}}, part})}}})},
        {"max_tokens", 4},
        {"temperature", 0}};
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(60, 0);
    auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  static json image(const std::string& url) {
    return {{"type", "image_url"}, {"image_url", {{"url", url}}}};
  }

  static std::filesystem::path dir_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<HttpServer> server_;
  std::shared_ptr<MediaEncoders> media_;
  std::thread thread_;
};
std::filesystem::path MediaServer::dir_;

TEST_F(MediaServer, AnswersAnImageAndCachesItWhenRepeated) {
  const std::string png = png_bytes(48, 40);
  auto [s1, b1] = chat(image(data_uri(png)));
  ASSERT_EQ(s1, 200) << b1.dump();
  EXPECT_EQ(b1["choices"][0]["message"]["role"], "assistant");
  const int64_t prompt = b1["usage"]["prompt_tokens"];
  EXPECT_GT(prompt, 16);  // 16 image rows and the text
  auto [s2, b2] = chat(image(data_uri(png)));
  ASSERT_EQ(s2, 200) << b2.dump();
  EXPECT_EQ(b2["choices"][0]["message"]["content"], b1["choices"][0]["message"]["content"]);
  EXPECT_GE(b2["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), 16)
      << b2["usage"].dump();
  EXPECT_EQ(media_->encoder_runs, 1u) << "the repeated image is not encoded again";
}

TEST_F(MediaServer, BadMediaIs400ByClassAndTheServerKeepsServing) {
  const std::string png = png_bytes(48, 40);
  const std::string param = "messages[0].content[1].image_url.url";
  struct Case {
    json part;
    const char* code;
  };
  const std::vector<Case> cases = {
      {image("https://example.com/cat.png"), "unsupported_url"},
      {image("data:image/png;base64,@@@notbase64"), "invalid_base64"},
      {image("not a uri"), "invalid_image_url"},
      {image(data_uri("GIF89a\x01\x00\x01\x00", "image/gif")), "unsupported_image_format"},
      {image(data_uri(png.substr(0, png.size() / 2))), "invalid_image"},
      {image(data_uri(png_bytes(300, 200))), "image_too_large"},
      {{{"type", "input_audio"},
        {"input_audio", {{"data", base64("RIFF....")}, {"format", "wav"}}}},
       "no_media_encoder"},
  };
  for (const Case& c : cases) {
    auto [status, body] = chat(c.part);
    EXPECT_EQ(status, 400) << c.code << " " << body.dump();
    EXPECT_EQ(body["error"]["code"], c.code) << body.dump();
    if (c.part["type"] == "image_url") {
      EXPECT_EQ(body["error"]["param"], param) << body.dump();
    }
  }
  auto [ok, body] = chat(image(data_uri(png)));
  EXPECT_EQ(ok, 200) << body.dump();
}

}  // namespace
}  // namespace edge::server
