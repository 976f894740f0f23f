// Standard base64 (RFC 4648): media in JSON bodies (data: URIs, input_audio, audio events).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace edge {

// Padded, with the standard alphabet.
std::string base64(std::string_view bytes);
// Padding optional; the URL-safe '-' and '_' are read as '+' and '/'. nullopt on any other
// character or an impossible length.
std::optional<std::string> base64_decode(std::string_view in);

}  // namespace edge
