#include "server/media_parts.h"

namespace edge::server {

namespace {

using nlohmann::json;

std::optional<ApiError> parse_image_url(const json& part, const std::string& param,
                                        MediaInput& in) {
  const std::string p = param + ".image_url.url";
  const json* url = nullptr;
  if (part.contains("image_url") && part["image_url"].is_object() &&
      part["image_url"].contains("url"))
    url = &part["image_url"]["url"];
  else if (part.contains("image_url") &&
           part["image_url"].is_string())  // a shorthand some clients send
    url = &part["image_url"];
  if (!url || !url->is_string())
    return ApiError::bad_request("'" + p + "' must be a string (a data: URI)", p, "invalid_type");
  const std::string& u = url->get_ref<const std::string&>();
  if (u.rfind("http://", 0) == 0 || u.rfind("https://", 0) == 0)
    return ApiError::bad_request(
        "'" + p +
            "': image URLs are not fetched by this server (it may be offline); send "
            "the image inline as a data: URI (data:image/png;base64,...)",
        p, "unsupported_url");
  const size_t comma = u.find(',');
  if (u.rfind("data:", 0) != 0 || comma == std::string::npos)
    return ApiError::bad_request("'" + p + "' must be a data: URI (data:image/png;base64,...)", p,
                                 "invalid_image_url");
  const std::string meta = u.substr(5, comma - 5);  // "image/png;base64"
  if (meta.size() < 7 || meta.compare(meta.size() - 7, 7, ";base64") != 0)
    return ApiError::bad_request("'" + p + "': the data: URI must be base64 (;base64,)", p,
                                 "invalid_image_url");
  const std::string mime = meta.substr(0, meta.size() - 7);
  if (mime.rfind("image/", 0) != 0)
    return ApiError::bad_request("'" + p + "': media type '" + mime + "' is not an image", p,
                                 "invalid_image_url");
  auto bytes = base64_decode(std::string_view(u).substr(comma + 1));
  if (!bytes)
    return ApiError::bad_request("'" + p + "': the base64 data is not valid", p, "invalid_base64");
  in.kind = MediaInput::Kind::kImage;
  in.bytes = std::move(*bytes);
  in.format = mime.substr(6);
  in.param = p;
  return std::nullopt;
}

std::optional<ApiError> parse_input_audio(const json& part, const std::string& param,
                                          MediaInput& in) {
  const std::string p = param + ".input_audio";
  if (!part.contains("input_audio") || !part["input_audio"].is_object() ||
      !part["input_audio"].contains("data") || !part["input_audio"]["data"].is_string())
    return ApiError::bad_request("'" + p + "' must be {data: base64, format: \"wav\"}", p,
                                 "invalid_type");
  const json& a = part["input_audio"];
  in.format =
      a.contains("format") && a["format"].is_string() ? a["format"].get<std::string>() : "wav";
  if (in.format != "wav")
    return ApiError::bad_request(
        "'" + p + ".format': '" + in.format + "' is not supported (wav is)", p + ".format",
        "unsupported_audio_format");
  auto bytes = base64_decode(a["data"].get_ref<const std::string&>());
  if (!bytes)
    return ApiError::bad_request("'" + p + ".data': the base64 data is not valid", p + ".data",
                                 "invalid_base64");
  in.kind = MediaInput::Kind::kAudio;
  in.bytes = std::move(*bytes);
  in.param = p + ".data";
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_media_part(const json& part, const std::string& param,
                                         std::string& text, std::vector<MediaInput>& media) {
  const std::string type =
      part.contains("type") && part["type"].is_string() ? part["type"].get<std::string>() : "";
  MediaInput in;
  if (type == "image_url") {
    if (auto e = parse_image_url(part, param, in)) return e;
  } else if (type == "input_audio") {
    if (auto e = parse_input_audio(part, param, in)) return e;
  } else {
    return ApiError::bad_request("'" + param + "': content part type '" + type +
                                     "' is not supported (text, image_url, input_audio are)",
                                 param, "unsupported");
  }
  text += kMediaMarker;
  media.push_back(std::move(in));
  return std::nullopt;
}

}  // namespace edge::server
