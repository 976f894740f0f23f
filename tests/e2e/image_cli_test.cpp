// Images in through the CLI: make-model writes random gemma3 / mlp projectors (F16, Q8_0)
// whose output width is the LM's, and `generate --mmproj P --image FILE -p TEXT` splices the
// image's rows before the text; a truncated image and a projector of another width are
// errors naming the problem.
#include <gtest/gtest.h>
#include <png.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "e2e/server_process.h"

namespace edge::e2e {
namespace {

std::string bin() {
  return std::string(EDGE_BINARY);
}

std::string projector(const std::string& arch, const std::string& type, int proj_dim) {
  const std::string p =
      server_tmp_dir() + "/" + arch + "_" + type + "_" + std::to_string(proj_dim) + ".gguf";
  const CommandResult r = run_command(
      bin() + " make-model --arch " + arch + " --dim 32 --ffn 64 --layers 1 --heads 4 " +
      "--proj-dim " + std::to_string(proj_dim) + " --type " + type + " -o " + p + " 2>&1");
  EXPECT_EQ(r.code, 0) << r.out;
  return p;
}

std::string write_png(const std::string& name, size_t keep = 0) {
  std::vector<uint8_t> px(50 * 40 * 3);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i % 253);
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  img.width = 50;
  img.height = 40;
  img.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&img, nullptr, &size, 0, px.data(), 0, nullptr));
  std::string bytes(size, '\0');
  EXPECT_TRUE(png_image_write_to_memory(&img, bytes.data(), &size, 0, px.data(), 0, nullptr));
  bytes.resize(keep ? keep : size);
  const std::string p = server_tmp_dir() + "/" + name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

TEST(ImageCli, GenerateWithAnImageSplicesItsRows) {
  const std::string lm = tiny_model(), png = write_png("img.png");
  ASSERT_FALSE(lm.empty());
  for (const auto& [arch, type, rows] :
       {std::tuple{"clip-gemma3", "f16", 16}, std::tuple{"clip-mlp", "q8_0", 256}}) {
    const CommandResult r =
        run_command(bin() + " generate -m " + lm + " --mmproj " + projector(arch, type, 64) +
                    " --image " + png + " -p 'what colour?' -n 3 --json 2>&1");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')), nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.out;
    EXPECT_EQ(j["image"]["tokens"], rows) << arch;
    EXPECT_GT(j["prompt_ids"].size(), static_cast<size_t>(rows));
    EXPECT_EQ(j["generated_ids"].size(), 3u);
  }
  const CommandResult trunc = run_command(bin() + " generate -m " + lm + " --mmproj " +
                                          projector("clip-gemma3", "f32", 64) + " --image " +
                                          write_png("cut.png", 70) + " -p x -n 1 2>&1");
  EXPECT_NE(trunc.code, 0);
  EXPECT_NE(trunc.out.find("PNG"), std::string::npos) << trunc.out;
  const CommandResult width =
      run_command(bin() + " generate -m " + lm + " --mmproj " +
                  projector("clip-gemma3", "f32", 48) + " --image " + png + " -p x -n 1 2>&1");
  EXPECT_NE(width.code, 0);
  EXPECT_NE(width.out.find("n_embd"), std::string::npos) << width.out;
}

}  // namespace
}  // namespace edge::e2e
