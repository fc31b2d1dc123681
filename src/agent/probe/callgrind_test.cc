#include "probe/callgrind.h"

#include <gtest/gtest.h>

#include "probe/callgrind_format.h"

namespace recur::probe {
namespace {

// Handcrafted in the shape callgrind 3.19 writes: name compression, relative positions,
// a call with its inclusive cost line.
constexpr const char* kDump = R"(# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4242
cmd:  recur bench rmsnorm --callgrind-child
part: 1

desc: I1 cache:
desc: Trigger: Client Request: recur-kernel-calls

positions: line
events: Ir
summary: 1000

ob=(1) /work/recur
fl=(1) src/stack/kernels/kda/kda_decode.cc
fn=(1) kda::decode_tile
12 300
+2 100
cfl=(2) src/stack/kernels/kda/kda_prologue.cc
cfn=(2) kda::prologue
calls=4 10
* 460
fn=(2)
10 400
+1 60
fn=(3) memcpy
0x10 140
)";

TEST(CallgrindFormat, ParsesSelfAndInclusiveCosts) {
  auto p = parse_callgrind(kDump);
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->events, "Ir");
  EXPECT_EQ(p->total, 1000u);
  EXPECT_NE(p->trigger.find("recur-kernel-calls"), std::string::npos);
  EXPECT_EQ(p->self.at("kda::decode_tile"), 400u);
  EXPECT_EQ(p->self.at("kda::prologue"), 460u);
  EXPECT_EQ(p->self.at("memcpy"), 140u);  // hex position 0x10
  EXPECT_EQ(p->calls.at("kda::decode_tile").at("kda::prologue"), 460u);
  EXPECT_EQ(p->inclusive("kda::decode_tile"), 860u);
}

TEST(CallgrindFormat, ErrorsNameTheLine) {
  struct Case {
    const char* text;
    const char* expect;
  };
  for (const Case& c : {Case{"fn=main\n", "no 'events:' header"}, Case{"12 30\n", "line 1: cost line before"},
                        Case{"events: Ir\nfn=(7)\n", "line 2: name id (7) used before"},
                        Case{"events: Ir\nfn=a\n1 x\n", "line 3: expected an event count"},
                        Case{"events: Ir\nfn=a\ncalls=1 2\n", "without a preceding cfn"},
                        Case{"events: Ir\nfn=a\ncfn=b\ncalls=1 2\n", "ends after calls="},
                        Case{"events: Ir\nbogus=1\n", "unknown specification 'bogus'"},
                        Case{"events: Ir\nwhat is this\n", "unrecognised line"},
                        Case{"events: Ir\nfn=a\n1 99999999999999999999999\n", "expected an event count"}}) {
    auto p = parse_callgrind(c.text);
    ASSERT_FALSE(p) << c.text;
    EXPECT_NE(p.error().message().find(c.expect), std::string::npos) << p.error().message();
  }
}

TEST(Callgrind, RegionsDecomposeTheTotalWithAnExplicitRemainder) {
  auto p = parse_callgrind(kDump);
  ASSERT_TRUE(p);
  std::vector<kernels::RegionSpec> regions = {{"prologue", "prologue"}, {"tile", "decode_tile"}};
  auto a = attribute_regions(*p, regions, 4, "kernel:kda_decode");
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].component, "kernel:kda_decode/prologue");
  EXPECT_DOUBLE_EQ(a[0].share, 0.46);  // "the prologue is 46% of instructions"
  EXPECT_EQ(a[1].component, "kernel:kda_decode/tile");
  EXPECT_DOUBLE_EQ(a[1].share, 0.40);  // its own cost; the call into the prologue is not double-counted
  EXPECT_EQ(a[2].component, "unattributed");
  EXPECT_NEAR(a[2].share, 0.14, 1e-12);
  Feedback f;
  f.probe = "bench.callgrind";
  f.attribution = a;
  f.attribution_is_decomposition = true;
  EXPECT_TRUE(validate_feedback(f));

  auto top = attribute_regions(*p, {}, 2, "kernel:x");
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].component, "kernel:x/kda::prologue");
  EXPECT_EQ(top[1].component, "kernel:x/kda::decode_tile");
  EXPECT_NEAR(top[2].share, 0.14, 1e-12);
}

}  // namespace
}  // namespace recur::probe
