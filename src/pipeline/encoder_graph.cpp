#include "pipeline/encoder_graph.h"

#include <fmt/format.h>

#include <filesystem>

namespace edge::pipeline {

Expected<PipelineSpec> vision_pipeline(const std::string& projector_path, Placement placement) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(projector_path, ec))
    return Status::not_found(fmt::format("projector {}: no such file", projector_path));
  if (placement == Placement::kExternal)
    return Status::invalid_argument("a vision stage runs in this process or in a worker, not external");
  PipelineSpec p;
  p.name = "vision";
  StageSpec s;
  s.name = "vision";
  s.kind = StageKind::kVisionEncoder;
  s.contract = ContractRef{"vision.encode", 1};
  s.placement = placement;
  s.artifacts.push_back(Artifact{"model", projector_path, ""});
  p.stages = {std::move(s)};
  p.routes = {Route{{"input", "image"}, {"vision", "image"}},
              Route{{"vision", "embeddings"}, {"output", "embeddings"}}};
  return p;
}

Expected<std::vector<float>> encode_on_graph(PipelineRuntime& rt, const RgbImage& img, int64_t* rows) {
  PortValue in;
  in.pixels = img.rgb;
  in.width = img.width, in.height = img.height;
  std::vector<float> out;
  *rows = 0;
  RETURN_IF_ERROR(rt.run({{"image", std::move(in)}}, [&](const StageEvent& e) {
    if (e.port != "embeddings") return;
    out.insert(out.end(), e.value.embeddings.begin(), e.value.embeddings.end());
    *rows += e.value.rows;
  }));
  return out;
}

}  // namespace edge::pipeline
