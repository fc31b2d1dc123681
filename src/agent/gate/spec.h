// A gate spec: the workload, the arms (configurations) and the conditions that must hold,
// read from TOML (docs/agent.md has the format with a full example).
//
//   name = "tp-agreement"
//   conditions = ["tokens_equal(tp2 vs tp1)", "logits_max_rel_err(tp2 vs tp1) <= 1e-4"]
//   [workload.engine]
//   model = "synthetic"              # "default" (the embedded model), "synthetic", or a .gguf path
//   [workload.engine.synthetic]
//   arch = "kimi-linear"  dim = 128 ...   (gate/synthetic_model.h: any architecture row)
//   [arms.tp1]
//   "engine.tp" = "1"
//   [arms.tp2]
//   "engine.tp" = "2"
//
// parse_gate_spec() checks everything that can be checked without running: TOML syntax and
// unknown keys, types and ranges, condition syntax, metric names, arms, arity and types (with
// file:line:column), knob names and values (against the registry), the kernel, its shape and
// each arm's variant; per-arm kernels and shapes (each exists and parses, the arm's variant knob
// names its own kernel, and check metrics compare only arms on the same kernel and shape).
// Plain data; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/knobs.h"
#include "core/status.h"
#include "gate/expr.h"
#include "gate/metrics.h"
#include "gate/synthetic_model.h"

namespace recur::gate {

struct EngineWorkload {
  std::string model = "default";  // "default", "synthetic" or a path
  std::optional<SyntheticModel> synthetic;
  std::vector<std::string> prompts = {"Once upon a time"};
  int batch = 1;             // sequences per step; the engine runs one (batch > 1 is refused)
  int prefill_tokens = 64;   // throughput: prompt tokens per run
  int decode_tokens = 16;    // throughput: generated tokens per run; also the greedy length of pair metrics
  int runs = 5;              // timed samples per arm (interleaved across arms)
  int best_of = 3;           // a sample is the fastest of this many back-to-back runs (as bench)
  int warmup_runs = 1;
};

struct KernelWorkload {
  std::string kernel;               // a registered kernel (`recur kernels`)
  std::string shape;                // "M64,N4096"; "" = the kernel's default
  double budget_s = 2;              // per bench.kernel measurement
  std::vector<uint64_t> seeds = {1, 2};  // check seeds
  std::vector<int> partitions;      // check: also compare against the variant split into P shards
};

// A program the gate runs once per sample (argv, never a shell), with the arm's knobs in its
// environment as RECUR_KNOBS="k=v k2=v2" (what `import recur` and `recur --set` read). It prints
// one JSON object on stdout (its last line that is one) with what it measured: prefill_tok_s
// and/or decode_tok_s. This is how a gate measures a path that is not the C++ engine alone, such
// as the Python prefill server (docs/agent.md, "Program workloads").
struct ProgramWorkload {
  // argv; placeholders: {python} (RECUR_PYTHON, else /usr/bin/python3: the Python recur's
  // bindings are built for), {spec_dir} (the spec's folder), {model} (the model below).
  std::vector<std::string> command;
  std::string model;  // "" (none), "default", "synthetic" or a path: what {model} becomes
  std::optional<SyntheticModel> synthetic;
  int runs = 5;          // timed samples per arm, interleaved across arms
  int warmup_runs = 0;   // untimed runs of each arm first
  int best_of = 1;       // a sample is the best of this many runs
  double timeout_s = 300;  // per run; a run over it is killed and the gate errors
  // The timeline, for attribution (agent/evidence.h): the program writes a trace when run with
  // `<trace_flag> PATH`; `background` is the work that should hide behind `foreground` (two
  // selectors, analyze/selector.h) and the overlap analysis measures whether it does.
  std::string trace_flag = "--trace";
  std::string background, foreground;
};

struct Arm {
  std::string name;  // letters, digits, '_'
  std::vector<std::pair<std::string, std::string>> knobs;  // by name (TOML tables are unordered)
  // Kernel metrics only: reserved keys `kernel = "..."` and `shape = "..."` in the arm's table
  // (knob names always contain a dot) measure this arm on another kernel or shape than
  // [workload.kernel]'s; "" = the workload's.
  std::string kernel, shape;
};

struct Condition {
  std::string text;
  Expr expr;
  ExprSource source;
};

struct GateSpec {
  std::string path;  // where it was read from ("" for text)
  std::string name;
  std::string description;
  int threads = 0;   // [workload] threads: the engine's pool (0 = every CPU)
  std::optional<EngineWorkload> engine;
  std::optional<KernelWorkload> kernel;
  std::optional<ProgramWorkload> program;
  std::vector<Arm> arms;  // by name
  std::vector<Condition> conditions;  // in spec order
  std::vector<MetricRequest> requests;  // every metric the conditions call, deduplicated

  const Arm* find_arm(std::string_view name) const;
};

// Parses and validates a spec; `path` names it in messages. Knobs are checked against
// `registry` (the kernel registry's variant knobs are registered first).
Result<GateSpec> parse_gate_spec(std::string_view toml_text, std::string_view path,
                                 const KnobRegistry& registry = KnobRegistry::global());
Result<GateSpec> load_gate_spec(const std::string& path, const KnobRegistry& registry = KnobRegistry::global());

// `spec`'s workload with other arms and conditions, checked as parse_gate_spec checks them: the
// agent's paired A/B of two configurations on a gate's own workload.
Result<GateSpec> respec(const GateSpec& spec, std::vector<Arm> arms, const std::vector<std::string>& conditions);

// The kernel workload of one arm: [workload.kernel] with the arm's kernel and shape, where it
// has them (parse_gate_spec checked that the resulting shape fits the kernel). spec.kernel must
// be set.
KernelWorkload arm_kernel_workload(const GateSpec& spec, const Arm& arm);
KernelWorkload arm_kernel_workload(const GateSpec& spec, std::string_view arm_name);  // an arm of spec

// The configuration of one arm: `base` (e.g. --set), then the arm's own assignments (which win).
// Errors name the arm and the knob.
Result<Config> arm_config(const GateSpec& spec, const Arm& arm, const Config& base);

}  // namespace recur::gate
