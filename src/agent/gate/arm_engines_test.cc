// Per-arm loading: arms that differ in a load-time knob (engine.weight_layout here) run on their
// own model instance over shared file bytes, arms that differ only in run-time knobs share one,
// and a gate whose arms differ only in the layout runs each arm's own layout (its matvec zones
// name the layout that ran: q8_0r16 vs Q8_0).
#include "gate/arm_engines.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "gate/cache_dir_fixture.h"

#include "gate/engine_probe.h"
#include "gate/gate.h"
#include "trace/trace.h"

namespace recur::gate {
namespace {

class ArmEnginesTest : public CacheDirSuite {};

// Q8_0 with every matrix's rows a multiple of 16, so r16 regroups them all.
constexpr std::string_view kLayoutGate = R"toml(name = "weight-layout-tiny"
conditions = [
  "tokens_equal(r16 vs rows)",
  "zone_time_us(r16, \"name=matvec,arg:dtype=q8_0r16\") > 0",
  "zone_time_us(rows, \"name=matvec,arg:dtype=q8_0r16\") == 0",
  "zone_time_us(rows, \"name=matvec,arg:dtype=Q8_0\") > 0",
  "decode_ratio(r16 vs rows) > 0",
]
[workload]
threads = 1
[workload.engine]
model = "synthetic"
prompts = ["hello world"]
prefill_tokens = 8
decode_tokens = 4
runs = 3
warmup_runs = 1
[workload.engine.synthetic]
arch = "llama"
dim = 64
layers = 2
heads = 4
kv_heads = 2
ffn = 128
vocab = 400
context = 128
dtype = "q8_0"
[arms.rows]
"engine.weight_layout" = "rows"
[arms.r16]
"engine.weight_layout" = "r16"
)toml";

TEST_F(ArmEnginesTest, TheLoadKeyNamesOnlyLoadTimeKnobsAndRecordsTheirReads) {
  Config c;
  ASSERT_TRUE(c.set("engine.tp", "2").has_value());  // run-time: not in the key
  EXPECT_EQ(engine_load_key(c), "defaults");
  ASSERT_TRUE(c.set("engine.weight_layout", "rows").has_value());
  ASSERT_TRUE(c.set("engine.pool_spin_us", "0").has_value());
  EXPECT_EQ(engine_load_key(c), "engine.pool_spin_us=0 engine.weight_layout=rows");
  ASSERT_TRUE(c.set("engine.weight_layout", "r16").has_value());  // the default, set explicitly
  EXPECT_EQ(engine_load_key(c), "engine.pool_spin_us=0");
  auto reads = c.track_reads();
  engine_load_key(c);
  const std::vector<std::string> names = reads->names();
  EXPECT_NE(std::find(names.begin(), names.end(), "engine.weight_layout"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "engine.tp"), names.end());
}

TEST_F(ArmEnginesTest, ArmsShareAnInstanceUnlessALoadTimeKnobDiffersAndShareTheBytesThen) {
  auto spec = parse_gate_spec(kLayoutGate, "");
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  auto path = resolve_model_path(*spec->engine);
  ASSERT_TRUE(path.has_value()) << path.error().message();
  ArmEngines engines(*path, 1);
  Config rows, rows_tp2, r16, mmap;
  ASSERT_TRUE(rows.set("engine.weight_layout", "rows").has_value());
  ASSERT_TRUE(rows_tp2.set("engine.weight_layout", "rows").has_value());
  ASSERT_TRUE(rows_tp2.set("engine.tp", "2").has_value());
  ASSERT_TRUE(mmap.set("engine.weights_memory", "mmap").has_value());
  auto a = engines.get(rows), b = engines.get(rows_tp2), c = engines.get(r16);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->model, b->model);  // engine.tp acts at run time: one instance
  EXPECT_EQ(a->pool, b->pool);
  EXPECT_NE(a->model, c->model);  // the layout is prepared at load: two instances...
  EXPECT_EQ(engines.instances(), 2u);
  EXPECT_EQ(engines.byte_copies(), 1u);  // ...over one copy of the file's bytes
  auto d = engines.get(mmap);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(engines.instances(), 3u);
  EXPECT_EQ(engines.byte_copies(), 2u);  // the bytes are held differently: their own copy

  // Each instance runs its own layout: its matvec zones name it.
  auto matvec_dtypes = [](const ArmEngine& e, const Config& knobs) {
    trace::reset();
    trace::set_enabled(true);
    auto session = e.model->new_session(*e.pool, 4, knobs);
    EXPECT_TRUE(session.has_value());
    if (session) {
      EXPECT_TRUE((*session)->step(1).has_value());
    }
    trace::set_enabled(false);
    trace::EventTable t = trace::capture();
    std::set<std::string> dtypes;
    for (size_t i = 0; i < t.size(); ++i)
      if (t.name(i) == "matvec")
        if (const trace::Arg* arg = t.find_arg(i, "dtype")) dtypes.insert(std::string(t.strings().str(arg->s)));
    return dtypes;
  };
  EXPECT_EQ(matvec_dtypes(*a, rows), (std::set<std::string>{"Q8_0"}));
  EXPECT_EQ(matvec_dtypes(*c, r16), (std::set<std::string>{"q8_0r16"}));
}

TEST_F(ArmEnginesTest, AGateWhoseArmsDifferOnlyInTheWeightLayoutRunsEachArmsLayout) {
  auto spec = parse_gate_spec(kLayoutGate, "");
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  GateRunOptions o;
  o.stop_at_first_failure = false;
  o.track_reads_of = "rows";
  auto r = run_gate(*spec, o);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->verdict.outcome, Outcome::kPass) << r->verdict.reason;
  const auto& notes = r->feedback.notes;
  EXPECT_NE(std::find_if(notes.begin(), notes.end(),
                         [](const std::string& n) {
                           return n.find("2 model instances") != std::string::npos &&
                                  n.find("engine.weight_layout=rows") != std::string::npos;
                         }),
            notes.end());
  ASSERT_TRUE(r->knobs_read.has_value());  // the load-time knobs are live for the workload
  EXPECT_NE(std::find(r->knobs_read->begin(), r->knobs_read->end(), "engine.weight_layout"), r->knobs_read->end());
}

}  // namespace
}  // namespace recur::gate
