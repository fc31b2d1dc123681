#include "serve/metrics.h"

#include <gtest/gtest.h>

namespace recur::serve {
namespace {

bool has_line(const std::string& page, const std::string& line) {
  return page.find("\n" + line + "\n") != std::string::npos || page.rfind(line + "\n", 0) == 0;
}

TEST(MetricsTest, PrometheusTextFormat) {
  Metrics m;
  m.count_request("/v1/completions", 200);
  m.count_request("/v1/completions", 200);
  m.count_request("/v1/completions", 429);
  m.observe_ttft(0.003);
  m.observe_ttft(0.2);
  m.observe_itl(0.02);
  m.add_tokens(10, 5);
  std::string page = m.render(3, 8);
  EXPECT_TRUE(has_line(page, "recur_http_requests_total{path=\"/v1/completions\",status=\"200\"} 2")) << page;
  EXPECT_TRUE(has_line(page, "recur_http_requests_total{path=\"/v1/completions\",status=\"429\"} 1"));
  EXPECT_TRUE(has_line(page, "# TYPE recur_time_to_first_token_seconds histogram"));
  // Buckets are cumulative: 0.003 falls in le=0.005, 0.2 in le=0.25.
  EXPECT_TRUE(has_line(page, "recur_time_to_first_token_seconds_bucket{le=\"0.0025\"} 0"));
  EXPECT_TRUE(has_line(page, "recur_time_to_first_token_seconds_bucket{le=\"0.005\"} 1"));
  EXPECT_TRUE(has_line(page, "recur_time_to_first_token_seconds_bucket{le=\"0.25\"} 2"));
  EXPECT_TRUE(has_line(page, "recur_time_to_first_token_seconds_bucket{le=\"+Inf\"} 2"));
  EXPECT_TRUE(has_line(page, "recur_time_to_first_token_seconds_count 2"));
  EXPECT_TRUE(has_line(page, "recur_inter_token_latency_seconds_count 1"));
  EXPECT_TRUE(has_line(page, "recur_queue_depth 3"));
  EXPECT_TRUE(has_line(page, "recur_prompt_tokens_total 10"));
  EXPECT_TRUE(has_line(page, "recur_generation_tokens_total 5"));
}

}  // namespace
}  // namespace recur::serve
