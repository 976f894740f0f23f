// Media in chat requests: content parts `image_url` (data: URIs only) and `input_audio`
// (base64 WAV) become a marker in the message text plus a MediaInput; after the chat
// template ran, the prompt is cut at the markers and each becomes the encoder family's
// begin marker, one placeholder per embedding row and its end marker, with the rows
// spliced there (edge/engine.h MediaEmbedding). docs/multimodal.md.
#pragma once

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "edge/engine.h"
#include "formats/image.h"
#include "model/arch/clip_vision.h"
#include "model/audio_input.h"
#include "server/api_error.h"
#include "server/media_parts.h"

namespace edge::pipeline {
class PipelineRuntime;
}

namespace edge::server {

// The encoders a server was started with (serve --mmproj). Encoding runs on its own pool,
// one image at a time, or (serve --vision-placement stage|worker) as the vision.encode@1
// stage of a one-stage graph on the server's ledger (pipeline/prebuilt/encoder_graph.h), where the
// server keeps only the projector's hyper-parameters.
struct MediaEncoders {
  std::unique_ptr<VisionEncoderModel> vision;           // in this process; null with a stage
  pipeline::PipelineRuntime* vision_stage = nullptr;    // not owned; outlives the server
  std::optional<ClipVisionHparams> vision_hparams;      // set whenever images are accepted
  uint64_t salt = 0;  // the projector's identity in the media hash
  ImageLimits image_limits;
  std::unique_ptr<AudioEncoderModel> audio;  // input_audio parts (docs/multimodal.md section 5)
  pipeline::PipelineRuntime* audio_stage = nullptr;  // --audio-placement stage|worker; not owned
  std::optional<WhisperEncHparams> audio_hparams;    // set whenever clips are accepted
  uint64_t audio_salt = 0;
  double max_audio_seconds = kDefaultMaxAudioSeconds;
  // The last kRecentMedia encoded parts by content hash: a repeated image or clip reuses its
  // rows instead of running the encoder again (the prefix cache then reuses its KV too).
  struct Recent {
    uint64_t hash = 0;
    int64_t n_tokens = 0;
    std::shared_ptr<const std::vector<float>> rows;
  };
  static constexpr size_t kRecentMedia = 8;
  std::vector<Recent> recent;  // most recent last
  uint64_t encoder_runs = 0;   // parts actually encoded
  std::unique_ptr<ThreadPool> pool;
  std::mutex mu;
};

// Loads an mmproj file's encoders: the vision one, the audio one (clip.has_audio_encoder), or
// both (their projection_dim must be the LM's n_embd; 0: checked later, by HttpServer::attach).
// With `vision_stage` the vision encoder runs there and only its header is read here.
Expected<std::shared_ptr<MediaEncoders>> load_media_encoders(
    const std::string& mmproj, int threads, int64_t lm_n_embd,
    pipeline::PipelineRuntime* vision_stage = nullptr,
    pipeline::PipelineRuntime* audio_stage = nullptr);
// Adds a second file's audio encoder (serve --mmproj-audio; the demo's); with `audio_stage`
// it runs there and only its header is read here.
Status add_audio_encoder(MediaEncoders& e, const std::string& mmproj,
                         pipeline::PipelineRuntime* audio_stage = nullptr);

// The rendered prompt with media: ids (markers replaced as above) and the spans. Errors
// name the part: no encoder for the kind, bad image (format, truncated, too many pixels),
// marker count not matching the parts.
std::optional<ApiError> build_media_prompt(MediaEncoders* encoders, const Tokenizer& tok,
                                           const std::string& text,
                                           const std::vector<MediaInput>& media,
                                           std::vector<int32_t>& ids,
                                           std::vector<MediaEmbedding>& spans);

}  // namespace edge::server
