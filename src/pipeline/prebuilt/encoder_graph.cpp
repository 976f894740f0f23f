#include "pipeline/prebuilt/encoder_graph.h"

#include <fmt/format.h>

#include <filesystem>

#include "pipeline/stages/audio_stage.h"
#include "pipeline/stages/vision_stage.h"

namespace edge::pipeline {

namespace {

// input.<port> -> <stage>.<port>, <stage>.embeddings -> output.embeddings.
Expected<PipelineSpec> encoder_pipeline(const std::string& projector_path, Placement placement,
                                        const StageKind& kind, const std::string& name,
                                        const std::string& port) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(projector_path, ec))
    return Status::not_found(fmt::format("projector {}: no such file", projector_path));
  if (placement == Placement::kExternal)
    return Status::invalid_argument(
        "an encoder stage runs in this process or in a worker, not external");
  PipelineSpec p;
  p.name = name;
  StageSpec s;
  s.name = name;
  s.kind = &kind;
  s.contract = ContractRef{kind.contract, 1};
  s.placement = placement;
  s.artifacts.push_back(Artifact{"model", projector_path, ""});
  p.stages = {std::move(s)};
  p.routes = {Route{{"input", port}, {name, port}},
              Route{{name, "embeddings"}, {"output", "embeddings"}}};
  return p;
}

// One input value through the graph; the rows of its terminal embeddings.
Expected<std::vector<float>> run_encoder(PipelineRuntime& rt, const std::string& port, PortValue in,
                                         int64_t* rows) {
  std::vector<float> out;
  *rows = 0;
  RETURN_IF_ERROR(rt.run({{port, std::move(in)}}, [&](const StageEvent& e) {
    if (e.port != "embeddings") return;
    out.insert(out.end(), e.value.embeddings.begin(), e.value.embeddings.end());
    *rows += e.value.rows;
  }));
  return out;
}

}  // namespace

Expected<PipelineSpec> vision_pipeline(const std::string& projector_path, Placement placement) {
  return encoder_pipeline(projector_path, placement, kVisionEncoderKind, "vision", "image");
}

Expected<PipelineSpec> audio_pipeline(const std::string& projector_path, Placement placement) {
  return encoder_pipeline(projector_path, placement, kAudioEncoderKind, "audio", "pcm");
}

Expected<std::vector<float>> encode_on_graph(PipelineRuntime& rt, const RgbImage& img,
                                             int64_t* rows) {
  PortValue in;
  in.pixels = img.rgb;
  in.width = img.width, in.height = img.height;
  return run_encoder(rt, "image", std::move(in), rows);
}

Expected<std::vector<float>> encode_on_graph(PipelineRuntime& rt, const std::vector<float>& pcm16k,
                                             int64_t* rows) {
  PortValue in;
  in.samples = pcm16k;
  return run_encoder(rt, "pcm", std::move(in), rows);
}

}  // namespace edge::pipeline
