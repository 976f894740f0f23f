// Media content parts of a chat request, parsed without any model: `image_url` (data:
// URIs only) and `input_audio` (base64 WAV) become a marker in the message text plus a
// MediaInput that media_request.h encodes later. Kept apart from the encoders so the
// request parser (and its fuzz target) links no model code.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base64.h"
#include "server/api_error.h"

namespace edge::server {

// Marks where a media part was in a message's text (llama.cpp's mtmd default marker).
inline constexpr const char* kMediaMarker = "<__media__>";

struct MediaInput {
  enum class Kind : uint8_t { kImage, kAudio };
  Kind kind = Kind::kImage;
  std::string bytes;   // decoded from base64
  std::string format;  // image: the data URI's subtype ("png", "jpeg"); audio: "wav"
  std::string param;   // "messages[1].content[0].image_url.url" for errors
};

// One content part that is not text: appends the marker to `text` and the input to
// `media`. 400s: an http(s) URL (this server does not fetch), a malformed data URI, bad
// base64, an unknown part type.
std::optional<ApiError> parse_media_part(const nlohmann::json& part, const std::string& param,
                                         std::string& text, std::vector<MediaInput>& media);

}  // namespace edge::server
