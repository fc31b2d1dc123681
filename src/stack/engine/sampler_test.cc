// The sampler picks through the registered kernel `sample` (kernels/layer sample()): greedy is its
// argmax, a sampled token is the kernel's walk seeded by one draw of the sequence's stream, and
// each pick's zone names the variant.
#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/layer/layer.h"
#include "trace/trace.h"

namespace recur {
namespace {

std::vector<float> some_logits(int vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> v(static_cast<size_t>(vocab));
  for (float& e : v) e = nd(rng);
  return v;
}

KernelChoice sample_kernel() {
  Config knobs;
  auto k = resolve_kernel(knobs, "sample");
  EXPECT_TRUE(k.has_value()) << (k ? "" : k.error().message());
  return k.value_or(KernelChoice{});
}

TEST(Sampler, GreedyIsTheArgmaxWithTiesToTheLowerId) {
  Sampler s({}, sample_kernel());
  std::vector<float> l = some_logits(500, 1);
  EXPECT_EQ(s.sample(l), argmax(l));
  l[17] = l[400] = 1e6f;
  EXPECT_EQ(s.sample(l), 17);
}

TEST(Sampler, ASampledTokenIsTheKernelsWalkSeededByTheSequencesStream) {
  const SamplerOptions o{.temperature = 0.7f, .top_p = 0.9f, .seed = 11};
  Sampler s(o, sample_kernel());
  std::mt19937_64 stream(o.seed);
  for (int i = 0; i < 20; ++i) {
    const std::vector<float> l = some_logits(300, uint64_t(100 + i));
    int32_t want = -1;
    ASSERT_TRUE(kernels::sample(l.data(), 1, 300, {.temperature = o.temperature, .top_p = o.top_p, .seed = stream()},
                                &want));
    EXPECT_EQ(s.sample(l), want) << "pick " << i;
  }
}

TEST(Sampler, EachPickNamesTheKernelVariantInItsZone) {
  Sampler s({.temperature = 1.0f, .seed = 3}, sample_kernel());
  trace::reset();
  trace::set_enabled(true);
  (void)s.sample(some_logits(64, 5));
  trace::set_enabled(false);
  const trace::EventTable t = trace::capture();
  int zones = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.name(i) != "sample") continue;
    ++zones;
    const trace::Arg* v = t.find_arg(i, "variant");
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(t.strings().str(v->s), "sorted_walk");
  }
  EXPECT_EQ(zones, 1);
}

}  // namespace
}  // namespace recur
