#include "core/knobs.h"

#include <thread>

#include <gtest/gtest.h>

namespace recur {
namespace {

KnobRegistry test_registry() {
  KnobRegistry r;
  EXPECT_TRUE(r.add({.name = "engine.tp", .type = KnobType::kInt, .min = 1, .max = 8, .default_value = "1",
                     .components = {"engine:tp"}, .help = "tensor-parallel ranks"}).has_value());
  EXPECT_TRUE(r.add({.name = "kernel.kda_decode.variant", .type = KnobType::kEnum,
                     .choices = {"vtile", "vtile_recip", "hoisted"}, .default_value = "hoisted",
                     .components = {"kernel:kda_decode"}}).has_value());
  EXPECT_TRUE(r.add({.name = "engine.kv_dtype.layer[]", .type = KnobType::kEnum, .choices = {"bf16", "fp8", "int8"},
                     .default_value = "bf16"}).has_value());
  EXPECT_TRUE(r.add({.name = "python.release_gil", .type = KnobType::kBool, .default_value = "false"}).has_value());
  EXPECT_TRUE(r.add({.name = "sampling.temp", .type = KnobType::kFloat, .min = 0, .max = 10, .default_value = "0.8"}).has_value());
  return r;
}

TEST(Knobs, RegistryValidatesSpecs) {
  KnobRegistry r = test_registry();
  EXPECT_FALSE(r.add({.name = "engine.tp", .type = KnobType::kInt, .default_value = "1"}).has_value()) << "duplicate";
  EXPECT_FALSE(r.add({.name = "x", .type = KnobType::kEnum, .default_value = "a"}).has_value()) << "no choices";
  EXPECT_FALSE(r.add({.name = "y", .type = KnobType::kInt, .min = 1, .max = 4, .default_value = "9"}).has_value());
  EXPECT_NE(r.find("engine.kv_dtype.layer[12]"), nullptr);
  EXPECT_EQ(r.find("engine.kv_dtype.layer[-1]"), nullptr);
  EXPECT_EQ(r.find("engine.kv_dtype.layer[x]"), nullptr);
  auto all = r.all();
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all.front()->name, "engine.kv_dtype.layer[]");  // sorted
}

TEST(Knobs, ConfigChecksValuesAndFallsBackToDefaults) {
  KnobRegistry r = test_registry();
  Config c(r);
  EXPECT_EQ(*c.get_int("engine.tp"), 1);
  ASSERT_TRUE(c.set_assignment("engine.tp=4").has_value());
  EXPECT_EQ(*c.get_int("engine.tp"), 4);
  EXPECT_NE(c.set("engine.tp", "9").error().message().find("outside [1, 8]"), std::string::npos);
  EXPECT_NE(c.set("engine.tp", "two").error().message().find("not an integer"), std::string::npos);
  EXPECT_NE(c.set("kernel.kda_decode.variant", "fast").error().message().find("vtile, vtile_recip, hoisted"),
            std::string::npos);
  EXPECT_NE(c.set("nope", "1").error().message().find("unknown knob 'nope'"), std::string::npos);
  EXPECT_FALSE(c.set_assignment("engine.tp").has_value());
  EXPECT_FALSE(c.set_assignment("=3").has_value());
  EXPECT_FALSE(c.set("engine.kv_dtype.layer[]", "fp8").has_value()) << "family needs an index";

  ASSERT_TRUE(c.set("engine.kv_dtype.layer[3]", "fp8").has_value());
  EXPECT_EQ(*c.get("engine.kv_dtype.layer[3]"), "fp8");
  EXPECT_EQ(*c.get("engine.kv_dtype.layer[4]"), "bf16");
  ASSERT_TRUE(c.set("python.release_gil", "on").has_value());
  EXPECT_TRUE(*c.get_bool("python.release_gil"));
  EXPECT_DOUBLE_EQ(*c.get_float("sampling.temp"), 0.8);
  EXPECT_FALSE(c.set("sampling.temp", "-1").has_value());
  EXPECT_EQ(c.overrides().size(), 3u);
  EXPECT_EQ(c.get("nope").error().code(), ErrorCode::kNotFound);
}

TEST(Knobs, TrackedReadsFollowTheConfigAndItsCopies) {
  KnobRegistry r = test_registry();
  Config c(r);
  ASSERT_TRUE(c.set("engine.tp", "2"));
  (void)c.get("python.release_gil");  // before tracking: not recorded
  auto reads = c.track_reads();
  const Config copy = c;
  std::thread t([&] { (void)copy.get_int("engine.tp"); });
  t.join();
  (void)c.get("engine.kv_dtype.layer[3]");
  for (int i = 0; i < 3; ++i) (void)c.get("engine.kv_dtype.layer[" + std::to_string(i) + "]");  // one buffer reused
  (void)c.get("engine.kv_dtype.layer[3]");  // again: no second entry
  (void)c.get("no.such.knob");  // an error, not a read
  Config other(r);
  (void)other.get("sampling.temp");  // another configuration
  EXPECT_EQ(reads->names(), (std::vector<std::string>{"engine.kv_dtype.layer[0]", "engine.kv_dtype.layer[1]",
                                                      "engine.kv_dtype.layer[2]", "engine.kv_dtype.layer[3]", "engine.tp"}));
}

}  // namespace
}  // namespace recur
