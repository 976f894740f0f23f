// serve --vision-placement / --audio-placement: the demo's image and audio parts answered
// through vision.encode@1 / audio.encode@1 graph stages (in worker processes, or in
// process) give exactly the replies of the encoders in the server's own pool; the stages'
// reservations are on the server's ledger; workers show as child processes; a broken image
// or clip is still the client's 400 and the server keeps serving.
#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "e2e/server_process.h"

namespace edge::e2e {
namespace {

using nlohmann::json;

std::string base64(const std::string& bytes) {
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
  return b64;
}

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
  return "data:image/png;base64," + base64(bytes);
}

// A 1 s 16-bit mono WAV at 22.05 kHz (the server resamples it to 16 kHz), as a base64 string.
std::string wav_base64() {
  const int rate = 22050, n = rate;
  std::string w = "RIFF" + std::string(4, '\0') + "WAVEfmt ";
  auto u32 = [&](uint32_t v) { for (int i = 0; i < 4; ++i) w += static_cast<char>((v >> (8 * i)) & 255); };
  auto u16 = [&](uint16_t v) { w += static_cast<char>(v & 255), w += static_cast<char>(v >> 8); };
  u32(16), u16(1), u16(1), u32(rate), u32(rate * 2), u16(2), u16(16);
  w += "data";
  u32(n * 2);
  for (int i = 0; i < n; ++i) u16(static_cast<uint16_t>(static_cast<int16_t>(8000 * std::sin(0.07 * i))));
  const uint32_t riff = static_cast<uint32_t>(w.size() - 8);
  for (int i = 0; i < 4; ++i) w[4 + i] = static_cast<char>((riff >> (8 * i)) & 255);
  return base64(w);
}

struct Reply {
  std::string status, text;
};

json image_part(const std::string& url) { return {{"type", "image_url"}, {"image_url", {{"url", url}}}}; }
json audio_part(const std::string& b64) {
  return {{"type", "input_audio"}, {"input_audio", {{"data", b64}, {"format", "wav"}}}};
}

Reply ask(ServerProcess& s, const json& part) {
  const json body = {{"model", "demo-llama-v1.gguf"},
                     {"max_tokens", 12},
                     {"temperature", 0},
                     {"messages",
                      {{{"role", "user"},
                        {"content", {{{"type", "text"}, {"text", "What is in this?"}}, part}}}}}};
  const std::string file = server_tmp_dir() + "/encoder_stage_body.json";
  std::ofstream(file) << body.dump();
  const std::string out = server_tmp_dir() + "/encoder_stage_reply.json";
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

TEST(ServerEncoderStages, WorkerAndInProcessStagesAnswerLikeTheServersOwnEncoders) {
  setenv("XDG_CACHE_HOME", (server_tmp_dir() + "/cache").c_str(), 1);
  const json image = image_part(png_data_uri()), clip = audio_part(wav_base64());
  std::string want_image, want_audio;
  double base_reserved = 0;
  {
    ServerProcess s;
    ASSERT_TRUE(s.start("", {"-t", "1"}));
    const Reply ri = ask(s, image), ra = ask(s, clip);
    ASSERT_EQ(ri.status, "200") << ri.text;
    ASSERT_EQ(ra.status, "200") << ra.text;
    want_image = ri.text, want_audio = ra.text;
    base_reserved = metric(s, "edge_ledger_reserved_bytes");
    EXPECT_EQ(s.stop(), 0) << s.log();
  }
  ASSERT_FALSE(want_image.empty());
  ASSERT_FALSE(want_audio.empty());
  for (const std::string placement : {"worker", "stage"}) {
    ServerProcess s;
    ASSERT_TRUE(s.start("", {"-t", "1", "--vision-placement", placement, "--audio-placement", placement}))
        << placement;
    EXPECT_NE(s.log().find("images through the vision stage"), std::string::npos) << s.log();
    EXPECT_NE(s.log().find("audio through the audio stage"), std::string::npos) << s.log();
    const Reply ri = ask(s, image), ra = ask(s, clip);
    ASSERT_EQ(ri.status, "200") << placement << ": " << ri.text;
    ASSERT_EQ(ra.status, "200") << placement << ": " << ra.text;
    EXPECT_EQ(ri.text, want_image) << placement;
    EXPECT_EQ(ra.text, want_audio) << placement;
    EXPECT_GT(metric(s, "edge_ledger_reserved_bytes"), base_reserved) << placement << ": the stages' reservations";
    const std::string children =
        run_command("pgrep -P " + std::to_string(s.pid()) + " -f ' worker --fd' | wc -l").out;
    EXPECT_EQ(std::atoi(children.c_str()), placement == "worker" ? 2 : 0) << placement;
    const Reply bad = ask(s, image_part("data:image/png;base64,iVBORw0KGgo="));  // a PNG signature only
    EXPECT_EQ(bad.status, "400") << bad.text;
    const Reply bad_clip = ask(s, audio_part("UklGRgAAAABXQVZF"));  // "RIFF....WAVE" and nothing else
    EXPECT_EQ(bad_clip.status, "400") << bad_clip.text;
    EXPECT_EQ(ask(s, image).text, want_image) << "the server keeps serving";
    EXPECT_EQ(s.stop(), 0) << s.log();
  }
}

}  // namespace
}  // namespace edge::e2e
