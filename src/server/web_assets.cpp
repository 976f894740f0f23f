#include "server/web_assets.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace edge::server {

extern const WebAsset kWebAssets[];  // web_assets_data.cpp, generated at build time
extern const size_t kWebAssetCount;

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Calls f(item) for each comma-separated item of a header value, trimmed.
template <typename F>
void for_each_item(std::string_view value, F&& f) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    f(trim(value.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

// "gzip;q=0.5" -> name "gzip", q 0.5 (1 without a q parameter; 0 for a malformed one).
double quality(std::string_view item, std::string& name) {
  const size_t semi = item.find(';');
  name = lower(trim(item.substr(0, semi)));
  if (semi == std::string_view::npos) return 1.0;
  const std::string params = lower(item.substr(semi + 1));
  const size_t q = params.find("q=");
  if (q == std::string::npos) return 1.0;
  try {
    return std::stod(params.substr(q + 2));
  } catch (...) {
    return 0.0;
  }
}

void serve_asset(const WebAsset& a, const httplib::Request& req, httplib::Response& res) {
  res.set_header("ETag", a.etag);
  // Revalidate every time (a 304 while unchanged): a new build is seen at once.
  res.set_header("Cache-Control", "no-cache");
  res.set_header("Vary", "Accept-Encoding");
  res.set_header("X-Content-Type-Options", "nosniff");
  if (etag_matches(req.get_header_value("If-None-Match"), a.etag)) {
    res.status = 304;
    return;
  }
  const bool gz = accepts_gzip(req.get_header_value("Accept-Encoding"));
  const unsigned char* bytes = gz ? a.gzip : a.raw;
  const size_t size = gz ? a.gzip_size : a.raw_size;
  if (gz) res.set_header("Content-Encoding", "gzip");
  res.status = 200;
  // A content provider of known length: httplib sends it as is (it compresses only plain
  // bodies and chunked providers), so the gzip made at build time is not compressed again.
  res.set_content_provider(size, a.content_type,
                           [bytes, size](size_t offset, size_t length, httplib::DataSink& sink) {
                             const size_t n = std::min(length, size - std::min(offset, size));
                             return sink.write(reinterpret_cast<const char*>(bytes) + offset, n);
                           });
}

}  // namespace

const WebAsset* find_web_asset(std::string_view path) {
  for (size_t i = 0; i < kWebAssetCount; ++i)
    if (path == kWebAssets[i].path) return &kWebAssets[i];
  return nullptr;
}

bool accepts_gzip(std::string_view accept_encoding) {
  bool gzip = false, star = false, gzip_named = false;
  for_each_item(accept_encoding, [&](std::string_view item) {
    std::string name;
    const double q = quality(item, name);
    if (name == "gzip" || name == "x-gzip") gzip_named = true, gzip = gzip || q > 0;
    if (name == "*") star = q > 0;
  });
  return gzip || (star && !gzip_named);
}

bool etag_matches(std::string_view if_none_match, std::string_view etag) {
  const auto opaque = [](std::string_view t) { return t.substr(0, 2) == "W/" ? t.substr(2) : t; };
  bool match = false;
  for_each_item(if_none_match, [&](std::string_view item) {
    match = match || item == "*" || opaque(item) == opaque(etag);
  });
  return match;
}

void add_web_routes(httplib::Server& svr) {
  const auto handler = [](const httplib::Request& req, httplib::Response& res) {
    if (const WebAsset* a = find_web_asset(req.path)) return serve_asset(*a, req, res);
    res.status = 404;  // the error handler writes the OpenAI-shaped body
  };
  svr.Get("/", handler);
  svr.Get(R"(/assets/[A-Za-z0-9._-]+)", handler);
}

}  // namespace edge::server
