#include "server/media_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <tuple>

#include "model/image_encoder.h"
#include "pipeline/prebuilt/encoder_graph.h"
#include "server/chat_prompt.h"

namespace edge::server {

namespace {

using nlohmann::json;

ApiError image_error(const Status& s, const std::string& param) {
  const char* code = s.code() == StatusCode::kUnsupported  ? "unsupported_image_format"
                     : s.code() == StatusCode::kOutOfRange ? "image_too_large"
                                                           : "invalid_image";
  return ApiError::bad_request("'" + param + "': " + s.message(), param, code);
}

ApiError audio_error(const Status& s, const std::string& param) {
  const char* code = s.code() == StatusCode::kUnsupported  ? "unsupported_audio_format"
                     : s.code() == StatusCode::kOutOfRange ? "audio_too_long"
                                                           : "invalid_audio";
  return ApiError::bad_request("'" + param + "': " + s.message(), param, code);
}

// One media part through its encoder: the rows, their hash, the family's markers.
struct EncodedPart {
  std::shared_ptr<const std::vector<float>> rows;  // [n_tokens, n_embd]
  int64_t n_tokens = 0;
  uint64_t hash = 0;
  std::string begin, end;
  bool bidirectional = false;
};

// What an encoder stage returned as the part's rows; a stage that failed (its worker died)
// or returned nothing is the server's 503, not the client's 400.
std::optional<ApiError> take_stage_rows(Expected<std::vector<float>> got, int64_t rows,
                                        std::span<const uint8_t> bytes, uint64_t salt, EncodedMedia* out) {
  if (!got || rows <= 0) {
    ApiError e = api_error_from_status(got ? Status::internal("the encoder stage returned no rows") : got.status());
    e.http_status = 503, e.type = "server_error";
    return e;
  }
  out->rows = std::move(*got);
  out->n_tokens = rows;
  out->hash = media_hash(bytes, salt);
  return std::nullopt;
}

// An image through the server's vision stage: decoded (and its limits checked) here, the
// encoder's preprocessing and forward pass in the stage.
std::optional<ApiError> encode_on_stage(MediaEncoders& enc, std::span<const uint8_t> bytes,
                                        const std::string& param, EncodedMedia* out) {
  auto img = decode_image(bytes, enc.image_limits);
  if (!img) return image_error(img.status(), param);
  int64_t rows = 0;
  auto got = pipeline::encode_on_graph(*enc.vision_stage, *img, &rows);
  return take_stage_rows(std::move(got), rows, bytes, enc.salt, out);
}

// A clip through the server's audio stage: decoded, checked and resampled to 16 kHz here,
// the log-mel and the encoder in the stage.
std::optional<ApiError> encode_clip_on_stage(MediaEncoders& enc, std::span<const uint8_t> bytes,
                                             const std::string& param, EncodedMedia* out) {
  double seconds = 0;
  auto pcm = wav_to_pcm16k(bytes.data(), bytes.size(), enc.max_audio_seconds, &seconds);
  if (!pcm) return audio_error(pcm.status(), param);
  int64_t rows = 0;
  auto got = pipeline::encode_on_graph(*enc.audio_stage, *pcm, &rows);
  return take_stage_rows(std::move(got), rows, bytes, enc.audio_salt, out);
}

std::optional<ApiError> encode_part(MediaEncoders* enc, const MediaInput& m, EncodedPart& out) {
  const bool audio = m.kind == MediaInput::Kind::kAudio;
  if (!enc || !(audio ? enc->audio_hparams.has_value() : enc->vision_hparams.has_value()))
    return ApiError::bad_request(
        fmt::format("'{}': this server has no {} encoder (start it with --mmproj FILE)", m.param,
                    audio ? "audio" : "image"),
        m.param, "no_media_encoder");
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(m.bytes.data()),
                                       m.bytes.size());
  out.hash = media_hash(bytes, audio ? enc->audio_salt : enc->salt);
  if (audio) {
    const AudioMarkers mk = audio_markers(enc->audio_hparams->projector);
    out.begin = mk.begin;
    out.end = mk.end;
  } else {
    // The projector table's markers around image rows (mtmd's).
    const VisionProjectorInfo& p = vision_projector_info(enc->vision_hparams->projector);
    out.begin = p.image_begin;
    out.end = p.image_end;
    out.bidirectional = p.bidirectional;
  }
  std::lock_guard<std::mutex> lk(enc->mu);
  for (auto it = enc->recent.begin(); it != enc->recent.end(); ++it) {
    if (it->hash != out.hash) continue;
    out.rows = it->rows;
    out.n_tokens = it->n_tokens;
    std::rotate(it, it + 1, enc->recent.end());  // now the most recent
    return std::nullopt;
  }
  EncodedMedia e;
  if (audio && enc->audio_stage) {
    if (auto err = encode_clip_on_stage(*enc, bytes, m.param, &e)) return err;
  } else if (audio) {
    auto a = embed_wav({select_kernels(), *enc->pool}, *enc->audio, bytes.data(), bytes.size(),
                       enc->max_audio_seconds);
    if (!a) return audio_error(a.status(), m.param);
    e = {std::move(a->rows), a->n_tokens, out.hash};
  } else if (enc->vision_stage) {
    if (auto err = encode_on_stage(*enc, bytes, m.param, &e)) return err;
  } else {
    auto img = encode_image({select_kernels(), *enc->pool}, *enc->vision, bytes, enc->image_limits,
                            enc->salt);
    if (!img) return image_error(img.status(), m.param);
    e = std::move(*img);
  }
  ++enc->encoder_runs;
  out.rows = std::make_shared<const std::vector<float>>(std::move(e.rows));
  out.n_tokens = e.n_tokens;
  if (enc->recent.size() == MediaEncoders::kRecentMedia) enc->recent.erase(enc->recent.begin());
  enc->recent.push_back({out.hash, out.n_tokens, out.rows});
  return std::nullopt;
}

}  // namespace

Status add_audio_encoder(MediaEncoders& e, const std::string& mmproj,
                         pipeline::PipelineRuntime* audio_stage) {
  if (audio_stage) {
    auto f = GgufFile::open(mmproj);
    if (!f) return f.status();
    ASSIGN_OR_RETURN(e.audio_hparams, read_whisper_enc_hparams(*f));
    e.audio_stage = audio_stage;
  } else {
    auto m = load_audio_encoder(mmproj);
    if (!m) return m.status();
    e.audio = std::make_unique<AudioEncoderModel>(std::move(*m));
    e.audio_hparams = e.audio->hparams;
  }
  e.audio_salt = std::hash<std::string>{}(mmproj) ^ 0x61756469ull;  // "audi": apart from images
  return Status();
}

Expected<std::shared_ptr<MediaEncoders>> load_media_encoders(const std::string& mmproj, int threads,
                                                             int64_t lm_n_embd,
                                                             pipeline::PipelineRuntime* vision_stage,
                                                             pipeline::PipelineRuntime* audio_stage) {
  auto e = std::make_shared<MediaEncoders>();
  auto f = GgufFile::open(mmproj);
  if (!f) return f.status();
  const bool audio = gguf_has_audio_encoder(*f);
  if (audio) RETURN_IF_ERROR(add_audio_encoder(*e, mmproj, audio_stage));
  if (audio && lm_n_embd > 0 && e->audio_hparams->n_out != lm_n_embd)
    return Status::invalid_argument(
        fmt::format("{}: clip.audio.projection_dim = {}, but the model's embedding width "
                    "is {}: the projector belongs to another model",
                    mmproj, e->audio_hparams->n_out, lm_n_embd));
  if (audio && !f->get_bool_or("clip.has_vision_encoder", false)) {
    e->pool = std::make_unique<ThreadPool>(std::max(1, threads));
    return e;
  }
  if (vision_stage) {
    ASSIGN_OR_RETURN(e->vision_hparams, read_clip_vision_hparams(*f));
    e->vision_stage = vision_stage;
  } else {
    ASSIGN_OR_RETURN(e->vision, load_vision_encoder(mmproj, threads));
    e->vision_hparams = e->vision->hparams;
  }
  if (lm_n_embd > 0 && e->vision_hparams->n_out != lm_n_embd)
    return Status::invalid_argument(
        fmt::format("{}: clip.vision.projection_dim = {}, but the model's embedding width "
                    "is {}: the projector belongs to another model",
                    mmproj, e->vision_hparams->n_out, lm_n_embd));
  e->salt = std::hash<std::string>{}(mmproj);
  e->pool = std::make_unique<ThreadPool>(std::max(1, threads));
  return e;
}

std::optional<ApiError> build_media_prompt(MediaEncoders* enc, const Tokenizer& tok,
                                           const std::string& text,
                                           const std::vector<MediaInput>& media,
                                           std::vector<int32_t>& ids,
                                           std::vector<MediaEmbedding>& spans) {
  const std::string marker = kMediaMarker;
  std::vector<std::string> pieces;
  for (size_t from = 0;;) {
    const size_t at = text.find(marker, from);
    pieces.push_back(text.substr(from, at == std::string::npos ? std::string::npos : at - from));
    if (at == std::string::npos) break;
    from = at + marker.size();
  }
  if (pieces.size() != media.size() + 1)
    return ApiError::bad_request(
        fmt::format("the prompt holds {} media markers for {} media parts (is '{}' in the "
                    "text, or does the chat template drop content?)",
                    pieces.size() - 1, media.size(), marker),
        "messages", "media_marker_mismatch");
  ids = tokenize_prompt(tok, pieces[0]);
  for (size_t i = 0; i < media.size(); ++i) {
    const MediaInput& m = media[i];
    EncodedPart e;
    if (auto err = encode_part(enc, m, e)) return err;
    for (int32_t id : tok.encode(e.begin, false, true)) ids.push_back(id);
    MediaEmbedding span;
    span.position = static_cast<int64_t>(ids.size());
    span.n_tokens = e.n_tokens;
    span.hash = e.hash;
    span.bidirectional = e.bidirectional;
    span.rows = std::move(e.rows);
    ids.insert(ids.end(), static_cast<size_t>(span.n_tokens),
               0);  // placeholders (keys come from the hash)
    spans.push_back(std::move(span));
    for (int32_t id : tok.encode(e.end, false, true)) ids.push_back(id);
    for (int32_t id : tok.encode(pieces[i + 1], false, true)) ids.push_back(id);
  }
  return std::nullopt;
}

}  // namespace edge::server
