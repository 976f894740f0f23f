// The chat page served at / and its assets (src/server/web/ and the Debian-packaged
// marked, DOMPurify and highlight.js), embedded at build time (cmake/web_assets.cmake), so
// `serve` needs no files at run time and works offline. Each asset is held as is and
// gzipped; responses carry the content type, a weak ETag (the file's SHA-256 prefix) with
// Cache-Control: no-cache (the browser revalidates and gets a 304), and gzip when the
// client accepts it. The page and its assets need no API key: the page asks for the key
// and sends it with the API calls.
#pragma once

#include <httplib.h>

#include <cstddef>
#include <string_view>

namespace edge::server {

struct WebAsset {
  const char* path;          // URL path: "/" or "/assets/<name>"
  const char* content_type;  // with charset
  const char* etag;          // W/"<32 hex digits of the SHA-256>"
  const unsigned char* raw;
  size_t raw_size;
  const unsigned char* gzip;  // the same bytes, gzip -9
  size_t gzip_size;
};

// The embedded assets (generated table); null when `path` is none of them.
const WebAsset* find_web_asset(std::string_view path);

// True when an Accept-Encoding value admits gzip ("gzip" or "*" without q=0).
bool accepts_gzip(std::string_view accept_encoding);
// True when an If-None-Match value names `etag` (weak comparison) or is "*".
bool etag_matches(std::string_view if_none_match, std::string_view etag);

// GET / and GET /assets/<name>.
void add_web_routes(httplib::Server& svr);

}  // namespace edge::server
