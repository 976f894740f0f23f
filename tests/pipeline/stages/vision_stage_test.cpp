// The vision.encode@1 stage on our encoder inside a graph: an RGB image in, the rows that
// reach output.embeddings are the encoder's own (resize with the projector's filter,
// normalise, ViT + projector); the stage's reservation on the ledger comes from the
// projector's footprint (weights + one encode) and is returned when the graph stops; a
// malformed image ends the request with an error.
#include "pipeline/stages/vision_stage.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "convert/random_vision_projector.h"
#include "core/thread_pool.h"
#include "formats/image.h"
#include "kernels/api.h"
#include "model/arch/clip_vision.h"
#include "pipeline/graph/artifact.h"
#include "pipeline/graph/executor.h"

namespace edge::pipeline {
namespace {

class VisionStage : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("edge_vision_stage_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "mmproj.gguf").string();
    RandomVisionProjectorOptions o;  // 64x64, patch 4, pool 4: 16 rows of 64
    o.n_embd = 32;
    o.n_ff = 64;
    ASSERT_TRUE(write_random_vision_projector(o, path_).ok());
    hash_ = *sha256_file(path_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  PipelineSpec spec() {
    auto p = parse_pipeline(
        "pipeline: see\nstages:\n  - name: enc\n    kind: vision_encoder\n    contract: "
        "vision.encode@1\n"
        "    artifacts: [{role: model, path: mmproj.gguf, sha256: " +
            hash_ +
            "}]\n"
            "routes: [input.image -> enc.image, enc.embeddings -> output.embeddings]\n",
        dir_.string());
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return *p;
  }

  std::filesystem::path dir_;
  std::string path_, hash_;
};

RgbImage test_image(int64_t w, int64_t h) {
  RgbImage img;
  img.width = w, img.height = h;
  for (int64_t i = 0; i < w * h * 3; ++i) img.rgb.push_back(static_cast<uint8_t>(i * 13 % 251));
  return img;
}

TEST_F(VisionStage, TheGraphsRowsAreTheEncodersAndItsMemoryIsReserved) {
  const RgbImage img = test_image(48, 40);
  auto m = load_vision_encoder(path_, 2);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ClipVisionHparams& h = (*m)->hparams;
  const std::vector<float> px = clip_vision_pixels(h, img);
  ThreadPool pool(2);
  const std::vector<float> want =
      clip_vision_forward({select_kernels(), pool}, h, (*m)->weights, px.data());
  auto reservation = vision_stage_reservation(path_);
  ASSERT_TRUE(reservation.ok());
  RamLedger ledger(int64_t{4} << 30, "test");
  {
    auto rt = PipelineRuntime::start(spec(), ledger);
    ASSERT_TRUE(rt.ok()) << rt.status().to_string();
    EXPECT_EQ(ledger.reserved(), *reservation);
    EXPECT_GT(*reservation, static_cast<int64_t>((*m)->weight_bytes));
    PortValue in;
    in.pixels = img.rgb, in.width = img.width, in.height = img.height;
    std::vector<float> got;
    int64_t rows = 0;
    Status st = (*rt)->run({{"image", in}}, [&](const StageEvent& e) {
      if (e.port != "embeddings") return;
      got.insert(got.end(), e.value.embeddings.begin(), e.value.embeddings.end());
      rows += e.value.rows;
    });
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_EQ(rows, 16);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_FLOAT_EQ(got[i], want[i]) << i;
    in.pixels.resize(10);  // not width x height x 3
    st = (*rt)->run({{"image", in}}, [](const StageEvent&) {});
    EXPECT_FALSE(st.ok());
  }
  EXPECT_EQ(ledger.reserved(), 0);
}

}  // namespace
}  // namespace edge::pipeline
