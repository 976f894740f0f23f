// The chat page and its assets as the server sends them: content types, gzip made at build
// time (sent as is, never compressed twice), ETag revalidation with 304, and the API-key
// rule (the page loads without the key, the API does not). A server without an engine is
// enough: the page is served while the model loads too.
#include "server/web_assets.h"

#include <gtest/gtest.h>

#include <csignal>
#include <string>
#include <thread>

#include "server/http_server.h"

namespace edge::server {
namespace {

TEST(WebAssets, TableHoldsThePageAndTheLibraries) {
  for (const char* path :
       {"/", "/assets/app.js", "/assets/chat.js", "/assets/marked.min.js", "/assets/purify.min.js",
        "/assets/highlight.min.js", "/assets/highlight.css"}) {
    const WebAsset* a = find_web_asset(path);
    ASSERT_NE(a, nullptr) << path;
    EXPECT_GT(a->raw_size, 0u) << path;
    ASSERT_GE(a->gzip_size, 2u) << path;
    EXPECT_EQ(a->gzip[0], 0x1f) << path;  // gzip magic
    EXPECT_EQ(a->gzip[1], 0x8b) << path;
  }
  EXPECT_EQ(find_web_asset("/assets/missing.js"), nullptr);
  EXPECT_EQ(find_web_asset("/v1/models"), nullptr);
  const std::string page(reinterpret_cast<const char*>(find_web_asset("/")->raw),
                         find_web_asset("/")->raw_size);
  EXPECT_NE(page.find("<!doctype html>"), std::string::npos);
  EXPECT_EQ(page.find("http://"), std::string::npos) << "the page must not reference another host";
  EXPECT_EQ(page.find("https://"), std::string::npos) << "the page must not reference another host";
}

TEST(WebAssets, AcceptEncodingAndIfNoneMatchParsing) {
  EXPECT_TRUE(accepts_gzip("gzip, deflate, br"));
  EXPECT_TRUE(accepts_gzip("br;q=1.0, GZIP;q=0.5"));
  EXPECT_TRUE(accepts_gzip("*"));
  EXPECT_FALSE(accepts_gzip(""));
  EXPECT_FALSE(accepts_gzip("br, deflate"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0, *"));
  EXPECT_FALSE(accepts_gzip("identity"));
  EXPECT_TRUE(etag_matches("W/\"abc\"", "W/\"abc\""));
  EXPECT_TRUE(etag_matches("\"x\", \"abc\"", "W/\"abc\""));  // weak comparison
  EXPECT_TRUE(etag_matches("*", "W/\"abc\""));
  EXPECT_FALSE(etag_matches("W/\"abd\"", "W/\"abc\""));
  EXPECT_FALSE(etag_matches("", "W/\"abc\""));
}

class WebServer : public ::testing::Test {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    ServerOptions o;
    o.port = 0;
    o.api_key = "secret";
    auto s = HttpServer::create(o);  // no engine: the API answers 503, the page is served
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    server_ = std::move(*s);
    ASSERT_TRUE(server_->bind().ok());
    thread_ = std::thread([this] { (void)server_->run(); });
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }
  // A client that shows the bytes as sent (no decompression) unless told otherwise.
  httplib::Result get(const std::string& path, const httplib::Headers& h, bool decompress = false) {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_decompress(decompress);
    return c.Get(path.c_str(), h);
  }
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

std::string bytes(const unsigned char* p, size_t n) {
  return std::string(reinterpret_cast<const char*>(p), n);
}

TEST_F(WebServer, ContentTypesAndGzipFromTheBuild) {
  const struct {
    const char* path;
    const char* type;
  } cases[] = {{"/", "text/html; charset=utf-8"},
               {"/assets/app.css", "text/css; charset=utf-8"},
               {"/assets/chat.js", "text/javascript; charset=utf-8"},
               {"/assets/highlight.min.js", "text/javascript; charset=utf-8"}};
  for (const auto& c : cases) {
    const WebAsset* a = find_web_asset(c.path);
    ASSERT_NE(a, nullptr);
    auto gz =
        get(c.path, {{"Accept-Encoding", "gzip, deflate, br"}});  // no key: the page is public
    ASSERT_TRUE(gz) << c.path;
    EXPECT_EQ(gz->status, 200) << c.path;
    EXPECT_EQ(gz->get_header_value("Content-Type"), c.type);
    EXPECT_EQ(gz->get_header_value("Content-Encoding"), "gzip") << c.path;
    EXPECT_EQ(gz->body, bytes(a->gzip, a->gzip_size))
        << c.path << ": not the build's gzip (compressed twice?)";
    EXPECT_EQ(gz->get_header_value("Vary"), "Accept-Encoding");
    EXPECT_EQ(gz->get_header_value("ETag"), a->etag);
    EXPECT_EQ(gz->get_header_value("Cache-Control"), "no-cache");
    // Without gzip (br only, or nothing): the plain bytes, not recompressed by the server.
    for (const char* enc : {"br", "identity"}) {
      auto plain = get(c.path, {{"Accept-Encoding", enc}});
      ASSERT_TRUE(plain);
      EXPECT_EQ(plain->get_header_value("Content-Encoding"), "") << c.path << " " << enc;
      EXPECT_EQ(plain->body, bytes(a->raw, a->raw_size)) << c.path << " " << enc;
    }
    // A client that decompresses gets the file itself.
    auto round = get(c.path, {}, /*decompress=*/true);
    ASSERT_TRUE(round);
    EXPECT_EQ(round->body, bytes(a->raw, a->raw_size)) << c.path;
  }
}

TEST_F(WebServer, EtagRevalidationGives304) {
  const WebAsset* a = find_web_asset("/assets/app.js");
  ASSERT_NE(a, nullptr);
  auto first = get("/assets/app.js", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(first);
  const std::string etag = first->get_header_value("ETag");
  ASSERT_FALSE(etag.empty());
  auto again = get("/assets/app.js", {{"Accept-Encoding", "gzip"}, {"If-None-Match", etag}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  EXPECT_TRUE(again->body.empty());
  EXPECT_EQ(again->get_header_value("ETag"), etag);
  auto stale = get("/assets/app.js", {{"If-None-Match", "W/\"0000\""}});
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 200);
  EXPECT_EQ(stale->body, bytes(a->raw, a->raw_size));
  // Another asset's tag does not validate this one.
  auto other = get("/", {{"If-None-Match", etag}});
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 200);
}

TEST_F(WebServer, OnlyThePageSkipsTheApiKey) {
  auto page = get("/", {});
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  auto api = get("/v1/models", {});
  ASSERT_TRUE(api);
  EXPECT_EQ(api->status, 401);
  auto unknown = get("/assets/not-there.js", {});  // not an asset: the API rule applies
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 401);
  auto unknown_keyed = get("/assets/not-there.js", {{"Authorization", "Bearer secret"}});
  ASSERT_TRUE(unknown_keyed);
  EXPECT_NE(unknown_keyed->status, 200);
}

}  // namespace
}  // namespace edge::server
