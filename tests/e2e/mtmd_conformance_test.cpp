// Conformance with ik_llama.cpp's mtmd on the tiny random projector + LM pairs made by
// tests/data/mtmd_vision/make_models.sh (our make-model, fixed seeds), against the numbers
// mtmd produced on the same files (tests/data/mtmd_vision/make_reference.cpp, with the
// commands that made them): image rows and the LM's logits after the image, for the gemma3
// projector (bidirectional image attention in the LM) and the mlp projector.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/thread_pool.h"
#include "e2e/server_process.h"
#include "formats/image.h"
#include "kernels/api.h"
#include "model/arch/clip_vision.h"
#include "model/forward.h"
#include "model/model.h"

namespace edge::e2e {
namespace {

const std::string kData = std::string(EDGE_SOURCE_DIR) + "/tests/data/mtmd_vision/";

std::vector<float> read_f32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> v;
  float x;
  while (in.read(reinterpret_cast<char*>(&x), sizeof x)) v.push_back(x);
  return v;
}

// Largest |a - b| over the largest |b|.
double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0, scale = 1e-6;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return worst / scale;
}

const std::string& models() {
  static const std::string dir = [] {
    const std::string d = server_tmp_dir() + "/mtmd_models";
    const CommandResult r =
        run_command("sh " + kData + "make_models.sh " + d + " " + EDGE_BINARY + " 2>&1");
    EXPECT_EQ(r.code, 0) << r.out;
    return d;
  }();
  return dir;
}

struct Result {
  std::vector<float> embd, logits;
};

// rows_for_lm: the rows the LM takes (null: ours).
// The image: the reference program's pattern, w x h (0: the encoder's size, no resize).
struct Image {
  int64_t w = 0, h = 0;
};

Result ours(const std::string& lm_path, const std::string& proj_path, const nlohmann::json& chunks,
            const std::vector<float>* rows_for_lm = nullptr, Image size = {}) {
  Result out;
  auto proj = load_vision_encoder(proj_path, 2);
  EXPECT_TRUE(proj.ok()) << proj.status().to_string();
  if (!proj.ok()) return out;
  const ClipVisionHparams& h = (*proj)->hparams;
  RgbImage img;
  img.width = size.w ? size.w : h.image_size;
  img.height = size.h ? size.h : h.image_size;
  for (int64_t y = 0; y < img.height; ++y)
    for (int64_t x = 0; x < img.width; ++x)
      for (int64_t c = 0; c < 3; ++c)
        img.rgb.push_back(static_cast<uint8_t>((37 * x + 91 * y + 53 * c + 7 * x * y) % 256));
  const std::vector<float> px = clip_vision_pixels(h, img);
  ThreadPool pool(2);
  out.embd = clip_vision_forward({select_kernels(), pool}, h, (*proj)->weights, px.data());
  LoadOptions lo;
  lo.n_threads = 2;
  auto lm = Model::load(lm_path, lo);
  EXPECT_TRUE(lm.ok()) << lm.status().to_string();
  if (!lm.ok()) return out;
  std::vector<int32_t> ids;
  std::vector<EmbeddingSplice> splices;
  for (const auto& c : chunks) {
    if (c.contains("image")) {
      const int64_t n = c["image"];
      const float* rows = rows_for_lm ? rows_for_lm->data() : out.embd.data();
      splices.push_back(
          {static_cast<int64_t>(ids.size()), n, rows, h.projector == VisionProjector::kGemma3});
      ids.insert(ids.end(), static_cast<size_t>(n), 0);
    } else {
      for (int32_t t : c["text"]) ids.push_back(t);
    }
  }
  auto st = InferenceState::create(**lm, 256);
  EXPECT_TRUE(st.ok());
  auto l = st->forward(ids, false, splices);
  EXPECT_TRUE(l.ok()) << l.status().to_string();
  if (l.ok()) out.logits.assign(l->begin(), l->end());
  return out;
}

struct Errors {
  double rows = 0, logits = 0, logits_from_mtmd_rows = 0;
};

// Our rows vs mtmd's, our logits (our rows into our LM) vs mtmd's, and our LM's logits
// when it takes mtmd's rows (the LM side alone: splice, mask, positions).
Errors compare(const std::string& name, const std::string& lm, const std::string& proj,
               Image size = {}) {
  std::ifstream in(kData + name + ".json");
  const nlohmann::json ref = nlohmann::json::parse(in);
  const std::vector<float> ref_rows = read_f32(kData + name + ".embd.f32"),
                           ref_logits = read_f32(kData + name + ".logits.f32");
  const Result r = ours(models() + "/" + lm, models() + "/" + proj, ref["chunks"], nullptr, size);
  const Result lm_only =
      ours(models() + "/" + lm, models() + "/" + proj, ref["chunks"], &ref_rows, size);
  if (const char* dump = std::getenv("EDGE_MTMD_DUMP")) {  // debugging: our rows and logits
    std::ofstream(std::string(dump) + "/" + name + ".embd.f32", std::ios::binary)
        .write(reinterpret_cast<const char*>(r.embd.data()),
               static_cast<std::streamsize>(r.embd.size() * 4));
  }
  Errors e{rel_err(r.embd, ref_rows), rel_err(r.logits, ref_logits),
           rel_err(lm_only.logits, ref_logits)};
  std::printf(
      "mtmd conformance %s: image rows rel err %.2e, logits rel err %.2e, logits from mtmd's rows "
      "%.2e\n",
      name.c_str(), e.rows, e.logits, e.logits_from_mtmd_rows);
  return e;
}

// Our ViT + projector rows against mtmd's (the reference made with 4 encoder threads: see
// make_reference.cpp for the ik copy bug below that), our logits after the image against
// mtmd's, and the Gemma-3 LM alone fed mtmd's rows (the bidirectional image span; the
// reference runs ik's flash-attention path, whose non-causal mask is right; its K and V
// are F16). Errors are of the largest value. Measured (release, AVX2): rows 1.7e-4 gemma3,
// 2.3e-4 mlp (ik's patch im2col is F16); logits 1.1e-3 / 1.3e-3, the same from mtmd's rows.
TEST(MtmdConformance, ImageRowsAndLogits) {
  const Errors g = compare("gemma3", "gemma3_lm.gguf", "gemma3_mmproj.gguf");
  const Errors m = compare("mlp", "llama_lm.gguf", "mlp_mmproj.gguf");
  EXPECT_LT(g.rows, 1e-3);
  EXPECT_LT(m.rows, 1e-3);
  EXPECT_LT(g.logits, 5e-3);
  EXPECT_LT(m.logits, 5e-3);
  EXPECT_LT(g.logits_from_mtmd_rows, 5e-3);  // Gemma-3, bidirectional image span
  EXPECT_LT(m.logits_from_mtmd_rows, 5e-3);  // Llama, causal media span
}

// Non-square images are letterboxed as mtmd does: 32x16 (gemma3, black bars above and
// below) and 16x32 (mlp, LLaVA's background left and right) fit 32 x 32 at scale 1, so the
// rows check the placement and the pad colour without resampling differences. Measured:
// rows 6.0e-5 / 2.5e-4, logits 1.0e-3 / 1.7e-3.
TEST(MtmdConformance, LetterboxedImagesMatchMtmd) {
  const Errors g = compare("gemma3_wide", "gemma3_lm.gguf", "gemma3_mmproj.gguf", {32, 16});
  const Errors m = compare("mlp_tall", "llama_lm.gguf", "mlp_mmproj.gguf", {16, 32});
  EXPECT_LT(g.rows, 1e-3);
  EXPECT_LT(m.rows, 1e-3);
  EXPECT_LT(g.logits, 5e-3);
  EXPECT_LT(m.logits, 5e-3);
}

}  // namespace
}  // namespace edge::e2e
