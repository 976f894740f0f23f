#include "media_input.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "commands.h"
#include "convert/random_model.h"
#include "convert/random_vision_projector.h"
#include "kernels/api.h"
#include "model/image_encoder.h"
#include "model/model.h"

namespace edge::cli {

Expected<SplicedPrompt> build_image_prompt(const Model& lm, const std::string& mmproj,
                                           const std::string& image_path, const std::string& text) {
  if (mmproj.empty())
    return Status::invalid_argument("--image needs --mmproj (a vision projector)");
  const Tokenizer* tok = lm.tokenizer();
  if (!tok) return Status::invalid_argument("--image needs a model with a tokenizer");
  auto enc = load_vision_encoder(mmproj, lm.pool().size());
  if (!enc) return enc.status();
  const ClipVisionHparams& h = (*enc)->hparams;
  if (h.n_out != lm.config().n_embd)
    return Status::invalid_argument(
        fmt::format("{}: projector output width {} differs from the model's n_embd {}", mmproj,
                    h.n_out, lm.config().n_embd));
  std::ifstream f(image_path, std::ios::binary);
  if (!f) return Status::io_error(image_path + ": cannot open");
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(f), {}};
  const auto t0 = std::chrono::steady_clock::now();
  auto e = encode_image({select_kernels(), lm.pool()}, **enc, bytes, ImageLimits{}, 0);
  if (!e) return Status(e.status().code(), image_path + ": " + e.status().message());
  SplicedPrompt p;
  p.encode_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const VisionProjectorInfo& proj = vision_projector_info(h.projector);  // the markers
  p.tokens = tok->encode(proj.image_begin, /*add_special=*/true);
  const int64_t pos = static_cast<int64_t>(p.tokens.size());
  p.n_rows = e->n_tokens;
  p.tokens.insert(p.tokens.end(), static_cast<size_t>(e->n_tokens), 0);  // placeholders
  const std::vector<int32_t> rest = tok->encode(proj.image_end + text, /*add_special=*/false);
  p.tokens.insert(p.tokens.end(), rest.begin(), rest.end());
  p.rows = std::move(e->rows);
  p.splices.push_back({pos, p.n_rows, p.rows.data(), proj.bidirectional});
  return p;
}

int make_vision_projector(const RandomModelOptions& m, int proj_dim, int image_size, int patch_size,
                          bool class_embd, const std::string& type, const std::string& out) {
  RandomVisionProjectorOptions o;
  // make-model's --arch clip-<projector type>
  const VisionProjectorInfo* proj = find_vision_projector(m.arch.substr(m.arch.find('-') + 1));
  o.projector = proj ? proj->projector : VisionProjector::kGemma3;
  o.n_embd = m.n_embd;
  o.n_layer = m.n_layer;
  o.n_head = m.n_head;
  o.n_ff = m.n_ff > 0 ? m.n_ff : m.n_embd * 3 / 2;
  o.n_out = proj_dim > 0 ? proj_dim : m.n_embd;
  o.n_mm_ff = o.n_ff;
  o.image_size = image_size;
  o.patch_size = patch_size;
  o.class_embd = class_embd && o.projector == VisionProjector::kMlp;
  auto dt = dtype_from_name(type);
  if (!dt) return report_error(dt.status());
  o.dtype = *dt;
  o.seed = m.seed;
  RETURN_CODE_IF_ERROR(write_random_vision_projector(o, out));
  std::fprintf(stderr, "edge-infer: wrote %s vision projector (random weights) to %s\n",
               vision_projector_name(o.projector), out.c_str());
  return 0;
}

}  // namespace edge::cli
