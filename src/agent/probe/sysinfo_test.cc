#include "probe/sysinfo.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/aligned_buffer.h"
#include "core/cpu_features.h"
#include "probe/roofline_kernels.h"
#include "probe/roofline_measure.h"
#include "probe/sysinfo_json.h"

namespace recur {
namespace {

TEST(Roofline, EveryReadPathSumsEveryWord) {
  const size_t bytes = 256 * 37;
  AlignedBuffer buf(bytes);
  auto words = buf.as<uint64_t>();
  uint64_t expect = 0;
  for (size_t i = 0; i < words.size(); ++i) {
    words[i] = i * 0x9E3779B97F4A7C15ull;
    expect += words[i];
  }
  for (Isa isa : runnable_isas()) {
    for (const auto* readers : {&roofline::kRead, &roofline::kReadPrefetch}) {
      Isa chosen;
      roofline::ReadFn read = readers->for_isa(isa, &chosen);
      EXPECT_EQ(chosen, isa);
      EXPECT_EQ(read(buf.data(), bytes), expect) << isa_name(isa);
      // A path that skipped the last block would miss this change.
      words[words.size() - 1] += 1;
      EXPECT_EQ(read(buf.data(), bytes), expect + 1) << isa_name(isa);
      words[words.size() - 1] -= 1;
    }
  }
}

TEST(Roofline, ComputeLoopsRunAndDeclareTheirWork) {
  for (Isa isa : runnable_isas()) {
    const roofline::ComputeLoop* fma = roofline::kFma.for_isa(isa);
    EXPECT_TRUE(std::isfinite(fma->run(1000)));
    EXPECT_EQ(fma->ops_per_iter, isa == Isa::kAvx512 ? 384 : isa == Isa::kAvx2 ? 192 : 96);
  }
  if (detected_isa() == Isa::kAvx512 && cpu_features().avx512vnni) {
    // 12 accumulators start at 0..11; each of 64 u8*s8 products per lane group is 3*-2.
    // Per 32-bit lane, one vpdpbusd adds 4 products: -24 per iteration.
    double sum = roofline::kInt8Avx512Vnni.run(10);
    EXPECT_DOUBLE_EQ(sum, 16.0 * (66.0 - 12 * 10 * 24));
  }
}

TEST(Roofline, SummarizeTakesMedianAndRange) {
  PeakMeasurement m = summarize_samples({5, 1, 3, 4, 2}, 2, "GB/s", "test");
  EXPECT_EQ(m.median, 3);
  EXPECT_EQ(m.min, 1);
  EXPECT_EQ(m.max, 5);
  EXPECT_EQ(m.samples, 5);
  EXPECT_DOUBLE_EQ(m.spread(), 4.0 / 3.0);
  EXPECT_EQ(summarize_samples({4, 2}, 1, "x", "").median, 3);
  EXPECT_EQ(summarize_samples({}, 1, "x", "").median, 0);
}

TEST(Sysinfo, DescribesThisMachine) {
  SystemInfo s = describe_machine();
  EXPECT_GE(s.logical_cpus, 1);
  EXPECT_GE(s.physical_cores, 1);
  EXPECT_EQ(s.isa, std::string(isa_name(active_isa())));
  bool has_l1d = false;
  for (const CacheLevel& c : s.caches) has_l1d |= (c.level == 1 && c.type == "Data" && c.size_bytes >= 4096);
  EXPECT_TRUE(has_l1d) << "sysfs cache info missing";
}

TEST(SysinfoCache, RoundTripsAndRejectsMalformedFiles) {
  SysinfoCache cache;
  cache.machine = describe_machine();
  Roofline r;
  r.read_bw_1t = summarize_samples({30, 31, 32}, 1, "GB/s", "sum-read");
  r.fp32_fma_all = summarize_samples({100, 101, 99}, 2, "GFLOP/s", "fma");
  cache.rooflines["avx2"] = {r, "2026-12-02T00:00:00Z"};
  std::string text = sysinfo_cache_to_json(cache);
  auto back = parse_sysinfo_cache(text);
  ASSERT_TRUE(back.has_value()) << back.error().message();
  ASSERT_EQ(back->rooflines.count("avx2"), 1u);
  EXPECT_EQ(back->rooflines["avx2"].roofline.read_bw_1t.median, 31);
  EXPECT_EQ(back->rooflines["avx2"].roofline.fp32_fma_all.threads, 2);
  EXPECT_EQ(back->machine.cpu_brand, cache.machine.cpu_brand);

  EXPECT_FALSE(parse_sysinfo_cache("{not json").has_value());
  EXPECT_FALSE(parse_sysinfo_cache("[1,2]").has_value());
  auto wrong_schema = parse_sysinfo_cache(R"({"schema": 99})");
  ASSERT_FALSE(wrong_schema.has_value());
  EXPECT_NE(wrong_schema.error().message().find("schema 99"), std::string::npos);
  std::string broken = text;
  broken.replace(broken.find("\"median\""), 8, "\"medium\"");
  auto missing = parse_sysinfo_cache(broken);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("missing field 'median'"), std::string::npos)
      << missing.error().message();
}

}  // namespace
}  // namespace recur
