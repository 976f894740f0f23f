// The Prometheus text: counters by label, cumulative histogram buckets, engine gauges.
#include <gtest/gtest.h>

#include "server/metrics.h"

namespace edge::server {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

TEST(Metrics, RequestsTokensAndEngineGauges) {
  ServerMetrics m;
  m.on_request("/v1/chat/completions", 200);
  m.on_request("/v1/chat/completions", 200);
  m.on_request("/v1/chat/completions", 400);
  m.on_prompt_tokens(12);
  m.on_generated_tokens(5);
  m.on_generated_tokens(2);
  EngineStats e;
  e.kv_blocks_used = 3;
  e.kv_blocks_total = 64;
  e.prefix_cache_hit_tokens = 16;
  e.prefix_cache_hits = 2;
  e.prefix_cache_window_miss_tokens = 32;
  e.requests_cancelled = 4;
  const std::string t = m.render(e);
  EXPECT_TRUE(has_line(t, "edge_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 2")) << t;
  EXPECT_TRUE(has_line(t, "edge_requests_total{endpoint=\"/v1/chat/completions\",status=\"400\"} 1"));
  EXPECT_TRUE(has_line(t, "edge_prompt_tokens_total 12"));
  EXPECT_TRUE(has_line(t, "edge_generated_tokens_total 7"));
  EXPECT_TRUE(has_line(t, "edge_kv_blocks_used 3"));
  EXPECT_TRUE(has_line(t, "edge_kv_blocks_total 64"));
  EXPECT_TRUE(has_line(t, "edge_prefix_cache_hit_tokens_total 16"));
  EXPECT_TRUE(has_line(t, "edge_prefix_cache_hits_total 2"));
  EXPECT_TRUE(has_line(t, "edge_prefix_cache_window_miss_tokens_total 32"));
  EXPECT_TRUE(has_line(t, "edge_engine_requests_cancelled_total 4"));
  EXPECT_TRUE(has_line(t, "# TYPE edge_time_to_first_token_seconds histogram"));
  EXPECT_NE(t.find("edge_memory_ledger_bytes{category=\"kv\"}"), std::string::npos);
}

TEST(Metrics, HistogramBucketsAreCumulative) {
  Histogram h({0.1, 1});
  h.observe(0.05);
  h.observe(0.5);
  h.observe(0.5);
  h.observe(5);
  const std::string t = h.render("x");
  EXPECT_TRUE(has_line(t, "x_bucket{le=\"0.1\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "x_bucket{le=\"1\"} 3"));
  EXPECT_TRUE(has_line(t, "x_bucket{le=\"+Inf\"} 4"));
  EXPECT_TRUE(has_line(t, "x_sum 6.05"));
  EXPECT_TRUE(has_line(t, "x_count 4"));
}

TEST(Metrics, EndpointLabelsAreBounded) {
  EXPECT_EQ(endpoint_label("/v1/models"), "/v1/models");
  EXPECT_EQ(endpoint_label("/v1/../../etc/passwd"), "other");
}

}  // namespace
}  // namespace edge::server
