// Encoder stages in a worker process of our own binary. vision.encode@1: the image goes to
// the worker through a shared-memory tensor (u8 [height][width][3]; a large one in a
// dedicated buffer), the embeddings come back the same way (f32 [rows][n_embd]), and the
// rows are the in-process stage's, bit for bit. A malformed image is the request's error,
// the worker keeps serving, and its reservation (the projector's footprint plus the
// worker's code) is on the ledger until the graph stops. audio.encode@1 likewise with
// 16 kHz PCM (f32 [n]) in.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "convert/random_audio_projector.h"
#include "convert/random_vision_projector.h"
#include "pipeline/graph/artifact.h"
#include "pipeline/graph/executor.h"
#include "pipeline/prebuilt/encoder_graph.h"
#include "pipeline/stages/audio_stage.h"
#include "pipeline/stages/vision_stage.h"

namespace edge::pipeline {
namespace {

class EncoderWorker : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("edge_encoder_worker_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    RandomVisionProjectorOptions o;  // 64x64, patch 4, pool 4: 16 rows
    o.n_embd = 32;
    o.n_ff = 64;
    ASSERT_TRUE(write_random_vision_projector(o, (dir_ / "mmproj.gguf").string()).ok());
    hash_ = *sha256_file((dir_ / "mmproj.gguf").string());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  PipelineSpec spec(const std::string& placement) {
    auto p = parse_pipeline(
        "pipeline: see\nstages:\n  - name: enc\n    kind: vision_encoder\n    contract: "
        "vision.encode@1\n"
        "    placement: " +
            placement + "\n    artifacts: [{role: model, path: mmproj.gguf, sha256: " + hash_ +
            "}]\nroutes: [input.image -> enc.image, enc.embeddings -> output.embeddings]\n",
        dir_.string());
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return *p;
  }
  static PortValue image(int64_t w, int64_t h) {
    PortValue v;
    v.width = w, v.height = h;
    for (int64_t i = 0; i < w * h * 3; ++i) v.pixels.push_back(static_cast<uint8_t>(i * 13 % 251));
    return v;
  }
  // The rows of one image through the graph; their count in *rows.
  static Status encode(PipelineRuntime& rt, const PortValue& img, std::vector<float>* out,
                       int64_t* rows) {
    out->clear(), *rows = 0;
    return rt.run({{"image", img}}, [&](const StageEvent& e) {
      if (e.port != "embeddings") return;
      out->insert(out->end(), e.value.embeddings.begin(), e.value.embeddings.end());
      *rows += e.value.rows;
    });
  }

  std::filesystem::path dir_;
  std::string hash_;
};

TEST_F(EncoderWorker, RowsMatchTheInProcessStageThroughSharedTensors) {
  PipelineRunOptions o;
  o.worker_binary = EDGE_BINARY;
  o.n_threads = 1;
  const PortValue small = image(48, 40), large = image(800, 600);  // 1.4 MB: over a 1 MiB slot
  std::vector<float> want_small, want_large, got;
  int64_t rows = 0;
  RamLedger ledger(int64_t{8} << 30, "test");
  {
    auto rt = PipelineRuntime::start(spec("in_process"), ledger, o);
    ASSERT_TRUE(rt.ok()) << rt.status().to_string();
    ASSERT_TRUE(encode(**rt, small, &want_small, &rows).ok());
    ASSERT_TRUE(encode(**rt, large, &want_large, &rows).ok());
    EXPECT_EQ(rows, 16);
  }
  auto reservation = vision_stage_reservation((dir_ / "mmproj.gguf").string());
  ASSERT_TRUE(reservation.ok());
  {
    auto rt = PipelineRuntime::start(spec("worker"), ledger, o);
    ASSERT_TRUE(rt.ok()) << rt.status().to_string();
    EXPECT_GT(ledger.reserved(), *reservation) << "the worker's code is reserved too";
    for (const auto* pair : {&small, &large}) {
      const Status st = encode(**rt, *pair, &got, &rows);
      ASSERT_TRUE(st.ok()) << st.to_string();
      EXPECT_EQ(rows, 16);
      const std::vector<float>& want = pair == &small ? want_small : want_large;
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;
    }
    const nlohmann::json transport = (*rt)->state_json()["stages"][0]["transport"];
    EXPECT_GE(transport.value("shm_dedicated", 0), 1) << transport.dump();
    PortValue broken = small;
    broken.pixels.resize(10);  // not width x height x 3
    EXPECT_FALSE(encode(**rt, broken, &got, &rows).ok());
    ASSERT_TRUE(encode(**rt, small, &got, &rows).ok()) << "the worker keeps serving";
    EXPECT_EQ(got, want_small);
  }
  EXPECT_EQ(ledger.reserved(), 0);
}

TEST_F(EncoderWorker, AudioStageRowsMatchInProcessAndItsReservationIsOnTheLedger) {
  const std::string path = (dir_ / "audio.gguf").string();
  RandomAudioProjectorOptions ao;
  ao.n_layer = 1, ao.n_ctx = 1500;
  ASSERT_TRUE(write_random_audio_projector(ao, path).ok());
  std::vector<float> pcm(16000 * 2);  // 2 s at 16 kHz
  for (size_t i = 0; i < pcm.size(); ++i) pcm[i] = 0.3f * std::sin(0.05f * static_cast<float>(i));
  PipelineRunOptions o;
  o.worker_binary = EDGE_BINARY;
  o.n_threads = 1;
  RamLedger ledger(int64_t{8} << 30, "test");
  std::vector<float> want, got;
  int64_t want_rows = 0, rows = 0;
  for (Placement placement : {Placement::kInProcess, Placement::kWorker}) {
    auto spec = audio_pipeline(path, placement);
    ASSERT_TRUE(spec.ok()) << spec.status().to_string();
    auto rt = PipelineRuntime::start(*spec, ledger, o);
    ASSERT_TRUE(rt.ok()) << rt.status().to_string();
    EXPECT_GE(ledger.reserved(), *audio_stage_reservation(path));
    auto r = encode_on_graph(**rt, pcm, &rows);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    if (placement == Placement::kInProcess) {
      want = *r, want_rows = rows;
      continue;
    }
    EXPECT_EQ(rows, want_rows);
    EXPECT_EQ(*r, want) << "the worker's rows are the in-process stage's";
    EXPECT_FALSE(encode_on_graph(**rt, std::vector<float>{}, &rows).ok())
        << "no samples is an error";
    EXPECT_TRUE(encode_on_graph(**rt, pcm, &rows).ok()) << "the worker keeps serving";
  }
  EXPECT_GT(want_rows, 0);
  EXPECT_EQ(ledger.reserved(), 0);
}

}  // namespace
}  // namespace edge::pipeline
