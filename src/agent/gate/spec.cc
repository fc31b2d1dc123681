#include "gate/spec.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analyze/selector.h"
#include "gate/toml_reader.h"
#include "kernels/registry.h"

namespace recur::gate {

namespace {

namespace fs = std::filesystem;

// `model` and `[<table>.synthetic]`: "default", "synthetic" (with its table) or a file (relative
// to the spec's folder). `model` keeps its value when the table names none.
Status read_model_choice(TomlTable& t, const std::string& spec_path, std::string& model,
                         std::optional<SyntheticModel>& synthetic) {
  RECUR_ASSIGN_OR_RETURN(auto name, t.string("model"));
  if (name) model = *name;
  RECUR_ASSIGN_OR_RETURN(auto table, t.subtable("synthetic"));
  if (table) {
    RECUR_ASSIGN_OR_RETURN(synthetic, read_synthetic_model(*table));
    if (!name) model = "synthetic";
  }
  if (model == "synthetic" && !synthetic) synthetic = SyntheticModel{};
  if (model != "synthetic" && synthetic)
    return unexpected(t.error_at(*t.find("synthetic"), "synthetic",
                                 fmt::format("a synthetic model table needs model = \"synthetic\", got \"{}\"", model)));
  if (!model.empty() && model != "default" && model != "synthetic") {
    fs::path p(model);
    if (p.is_relative() && !spec_path.empty()) p = fs::path(spec_path).parent_path() / p;
    if (!fs::exists(p))
      return unexpected(t.error_at(*t.find("model"), "model",
                                   fmt::format("no such file: {} (relative paths are relative to the spec's folder; "
                                               "or use \"default\" or \"synthetic\")",
                                               p.string())));
    model = p.string();
  }
  return ok_status();
}

Result<EngineWorkload> read_engine(TomlTable t, const std::string& spec_path) {
  EngineWorkload w;
  RECUR_RETURN_IF_ERROR(read_model_choice(t, spec_path, w.model, w.synthetic));
  RECUR_ASSIGN_OR_RETURN(auto prompts, t.strings("prompts"));
  if (prompts) {
    if (prompts->empty()) return unexpected(t.error_at(*t.find("prompts"), "prompts", "expected at least one prompt"));
    w.prompts = *prompts;
  }
  RECUR_ASSIGN_OR_RETURN(auto batch, t.integer("batch", 1, 4096));
  if (batch) {
    if (*batch != 1)
      return unexpected(t.error_at(*t.find("batch"), "batch",
                                   fmt::format("batch = {}: the engine runs one sequence per session so far; batch "
                                               "must be 1",
                                               *batch)));
    w.batch = int(*batch);
  }
  auto read_int = [&](std::string_view key, int& out, int64_t lo, int64_t hi) -> Status {
    RECUR_ASSIGN_OR_RETURN(auto v, t.integer(key, lo, hi));
    if (v) out = int(*v);
    return ok_status();
  };
  RECUR_RETURN_IF_ERROR(read_int("prefill_tokens", w.prefill_tokens, 1, 1 << 16));
  RECUR_RETURN_IF_ERROR(read_int("decode_tokens", w.decode_tokens, 1, 1 << 16));
  RECUR_RETURN_IF_ERROR(read_int("runs", w.runs, 1, 1000));
  RECUR_RETURN_IF_ERROR(read_int("warmup_runs", w.warmup_runs, 0, 100));
  RECUR_RETURN_IF_ERROR(read_int("best_of", w.best_of, 1, 100));
  RECUR_RETURN_IF_ERROR(t.finish());
  return w;
}

Result<KernelWorkload> read_kernel(TomlTable t) {
  KernelWorkload w;
  RECUR_ASSIGN_OR_RETURN(auto name, t.string("name"));
  if (!name) return unexpected(Error(ErrorCode::kParse, fmt::format("{}: {}: missing key 'name' (a kernel; `recur kernels` "
                                                                    "lists them)",
                                                                    node_position(t.file(), t.table()), t.name())));
  const auto& registry = kernels::KernelRegistry::global();
  auto spec = registry.lookup(*name);
  if (!spec) return unexpected(t.error_at(*t.find("name"), "name", spec.error().message()));
  w.kernel = *name;
  RECUR_ASSIGN_OR_RETURN(auto shape, t.string("shape"));
  if (shape) w.shape = *shape;
  if (auto s = (*spec)->parse_shape(w.shape); !s)
    return unexpected(t.error_at(shape ? *t.find("shape") : t.table(), "shape", s.error().message()));
  RECUR_ASSIGN_OR_RETURN(auto budget, t.number("budget_s", 0.01, 3600));
  if (budget) w.budget_s = *budget;
  RECUR_ASSIGN_OR_RETURN(auto seeds, t.integers("seeds", 0, INT64_MAX));
  if (seeds) {
    if (seeds->empty()) return unexpected(t.error_at(*t.find("seeds"), "seeds", "expected at least one seed"));
    w.seeds.assign(seeds->begin(), seeds->end());
  }
  RECUR_ASSIGN_OR_RETURN(auto parts, t.integers("partitions", 1, 1024));
  if (parts) {
    if (!(*spec)->partitioning && !parts->empty())
      return unexpected(t.error_at(*t.find("partitions"), "partitions",
                                   fmt::format("kernel {} has no partitioning", w.kernel)));
    w.partitions.assign(parts->begin(), parts->end());
  }
  RECUR_RETURN_IF_ERROR(t.finish());
  return w;
}

Result<ProgramWorkload> read_program(TomlTable t, const std::string& spec_path) {
  ProgramWorkload w;
  RECUR_ASSIGN_OR_RETURN(auto command, t.strings("command"));
  if (!command || command->empty())
    return unexpected(Error(ErrorCode::kParse,
                            fmt::format("{}: {}: missing 'command', a non-empty array of strings (argv; no shell), e.g. "
                                        "[\"{{python}}\", \"{{spec_dir}}/bench.py\", \"--json\"]",
                                        node_position(t.file(), t.table()), t.name())));
  w.command = *command;
  RECUR_RETURN_IF_ERROR(read_model_choice(t, spec_path, w.model, w.synthetic));
  bool names_model = false;
  for (const std::string& a : w.command) names_model = names_model || a.find("{model}") != std::string::npos;
  if (names_model && w.model.empty())
    return unexpected(t.error_at(*t.find("command"), "command", "uses {model}, but the table names no model = ..."));
  RECUR_ASSIGN_OR_RETURN(auto runs, t.integer("runs", 1, 1000));
  if (runs) w.runs = int(*runs);
  RECUR_ASSIGN_OR_RETURN(auto warmup, t.integer("warmup_runs", 0, 100));
  if (warmup) w.warmup_runs = int(*warmup);
  RECUR_ASSIGN_OR_RETURN(auto best_of, t.integer("best_of", 1, 100));
  if (best_of) w.best_of = int(*best_of);
  RECUR_ASSIGN_OR_RETURN(auto timeout, t.number("timeout_s", 0.1, 86400));
  if (timeout) w.timeout_s = *timeout;
  RECUR_ASSIGN_OR_RETURN(auto timeline, t.subtable("timeline"));
  if (timeline) {
    RECUR_ASSIGN_OR_RETURN(auto flag, timeline->string("trace_flag"));
    if (flag) w.trace_flag = *flag;
    for (auto [key, out] : {std::pair{"background", &w.background}, std::pair{"foreground", &w.foreground}}) {
      RECUR_ASSIGN_OR_RETURN(auto sel, timeline->string(key));
      if (!sel) continue;
      if (auto parsed = analyze::Selector::parse(*sel); !parsed)
        return unexpected(timeline->error_at(*timeline->find(key), key, parsed.error().message()));
      *out = *sel;
    }
    if (w.background.empty() != w.foreground.empty())
      return unexpected(timeline->error_at(timeline->table(), "background",
                                           "give both background and foreground (the overlap analysis compares them)"));
    RECUR_RETURN_IF_ERROR(timeline->finish());
  }
  RECUR_RETURN_IF_ERROR(t.finish());
  return w;
}

// Knob assignments of one arm; nested tables flatten to dotted names, so `engine.tp = 4` and
// `"engine.tp" = "4"` say the same.
struct KnobAt {
  std::string name, value, position;
};

// The arm's reserved keys: `kernel` (unless a table: the start of a dotted knob name) and `shape`.
bool reserved_arm_key(std::string_view key, const toml::node& value) {
  return (key == "kernel" && !value.is_table()) || key == "shape";
}

Status flatten_arm(const toml::table& t, const std::string& prefix, const std::string& file, std::vector<KnobAt>& out) {
  for (auto&& [k, v] : t) {
    if (prefix.empty() && reserved_arm_key(k.str(), v)) continue;
    std::string name = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    std::string value;
    if (v.is_table()) {
      RECUR_RETURN_IF_ERROR(flatten_arm(*v.as_table(), name, file, out));
      continue;
    }
    if (v.is_string()) value = v.as_string()->get();
    else if (v.is_integer()) value = fmt::format("{}", v.as_integer()->get());
    else if (v.is_floating_point()) value = fmt::format("{}", v.as_floating_point()->get());
    else if (v.is_boolean()) value = v.as_boolean()->get() ? "true" : "false";
    else
      return unexpected(Error(ErrorCode::kParse, fmt::format("{}: knob {}: expected a string, number or boolean value",
                                                             node_position(file, v), name)));
    out.push_back({name, value, node_position(file, v)});
  }
  return ok_status();
}

bool valid_arm_name(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return name != "and" && name != "or" && name != "not" && name != "vs";
}

// The reserved keys of an arm's table (kernel, shape), checked against the registry: the kernel
// exists and the arm's shape (or the workload's) parses for it.
Status read_arm_target(const toml::table& table, const std::string& arm_name, const TomlTable& t,
                       const std::optional<KernelWorkload>& workload, Arm& arm) {
  const toml::node* kernel = table.get("kernel");
  const toml::node* shape = table.get("shape");
  if (kernel && !reserved_arm_key("kernel", *kernel)) kernel = nullptr;  // kernel.<name>.variant = ...
  if (!kernel && !shape) return ok_status();
  for (const toml::node* n : {kernel, shape}) {
    if (n && !n->is_string())
      return unexpected(t.error_at(*n, arm_name, fmt::format("{} expected a string (a reserved key: the arm's {})",
                                                             n == kernel ? "kernel" : "shape",
                                                             n == kernel ? "kernel, as `recur kernels` names it"
                                                                         : "shape, e.g. \"B1,HV32\"")));
  }
  const toml::node* at = kernel ? kernel : shape;
  if (!workload)
    return unexpected(t.error_at(*at, arm_name, "an arm's kernel and shape need a [workload.kernel] table (budget, "
                                                "seeds; its name is the default kernel)"));
  if (kernel) arm.kernel = kernel->as_string()->get();
  if (shape) arm.shape = shape->as_string()->get();
  const std::string kernel_name = arm.kernel.empty() ? workload->kernel : arm.kernel;
  auto spec = kernels::KernelRegistry::global().lookup(kernel_name);
  if (!spec) return unexpected(t.error_at(*at, arm_name, fmt::format("kernel: {}", spec.error().message())));
  const std::string shape_text = shape ? arm.shape : workload->shape;
  if (auto s = (*spec)->parse_shape(shape_text); !s)
    return unexpected(t.error_at(
        shape ? *shape : *at, arm_name,
        fmt::format("shape '{}'{} does not fit kernel {}: {}{}", shape_text, shape ? "" : " (from [workload.kernel])",
                    kernel_name, s.error().message(), shape ? "" : "; give the arm its own shape = \"...\"")));
  if (!workload->partitions.empty() && !(*spec)->partitioning)
    return unexpected(t.error_at(*at, arm_name,
                                 fmt::format("kernel {} has no partitioning, but [workload.kernel] asks for partitions",
                                             kernel_name)));
  return ok_status();
}

Result<std::vector<Arm>> read_arms(TomlTable t, const KnobRegistry& registry,
                                   const std::optional<KernelWorkload>& workload) {
  std::vector<Arm> arms;
  for (auto&& [k, v] : t.table()) {
    std::string name(k.str());
    t.find(name);
    if (!valid_arm_name(name))
      return unexpected(t.error_at(v, name, "an arm name is letters, digits and '_', starting with a letter, and not "
                                            "and/or/not/vs"));
    if (!v.is_table())
      return unexpected(t.error_at(v, name, "expected a table of knob assignments, e.g. { \"engine.tp\" = \"4\" }"));
    Arm arm{name, {}, "", ""};
    RECUR_RETURN_IF_ERROR(read_arm_target(*v.as_table(), name, t, workload, arm));
    std::vector<KnobAt> knobs;
    RECUR_RETURN_IF_ERROR(flatten_arm(*v.as_table(), "", t.file(), knobs));
    Config check(registry);
    for (const KnobAt& kv : knobs) {
      if (auto s = check.set(kv.name, kv.value); !s)
        return unexpected(Error(ErrorCode::kParse, fmt::format("{}: arm {}: {}", kv.position, name, s.error().message())));
      arm.knobs.emplace_back(kv.name, kv.value);
    }
    arms.push_back(std::move(arm));
  }
  if (arms.empty())
    return unexpected(Error(ErrorCode::kParse, fmt::format("{}: [arms] declares no arm; expected e.g. [arms.baseline]",
                                                           node_position(t.file(), t.table()))));
  return arms;
}

// Where the condition's first character is: the string node starts at its opening quote; when
// the raw line holds the text verbatim right after it (no escapes), columns are exact.
ExprSource condition_source(const toml::node& node, std::string_view text, const std::vector<std::string>& lines,
                            const std::string& file, size_t index) {
  ExprSource src;
  src.file = file;
  src.label = fmt::format("condition {}", index + 1);
  const toml::source_position& p = node.source().begin;
  if (!p) return src;
  src.line = int(p.line);
  if (p.line >= 1 && p.line <= lines.size()) {
    const std::string& line = lines[p.line - 1];
    const size_t q = p.column - 1;
    if (q < line.size() && (line[q] == '"' || line[q] == '\'') && line.compare(q + 1, text.size(), text) == 0)
      src.column = int(p.column) + 1;
  }
  return src;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::string cur;
  std::istringstream in{std::string(text)};
  while (std::getline(in, cur)) lines.push_back(cur);
  return lines;
}

// Each arm's variant exists for its kernel, and the arm sets no other kernel's variant knob
// (that would silently measure the default variant).
Status check_kernel_arms(const GateSpec& spec, const KnobRegistry& registry) {
  const auto& kernels = kernels::KernelRegistry::global();
  for (const Arm& arm : spec.arms) {
    const kernels::KernelSpec* k = kernels.find(arm_kernel_workload(spec, arm).kernel);
    for (const auto& [knob, value] : arm.knobs) {
      const std::string prefix = "kernel.", suffix = ".variant";
      if (!knob.starts_with(prefix) || !knob.ends_with(suffix) || knob.size() <= prefix.size() + suffix.size()) continue;
      const std::string other = knob.substr(prefix.size(), knob.size() - prefix.size() - suffix.size());
      if (other != k->name && kernels.find(other) != nullptr)
        return invalid_argument("{}: arm {}: knob {} chooses a variant of kernel {}, but the arm measures kernel {}{}",
                                spec.path, arm.name, knob, other, k->name,
                                arm.kernel.empty() ? " ([workload.kernel]); add kernel = \"" + other + "\" to the arm"
                                                   : "");
    }
    RECUR_ASSIGN_OR_RETURN(Config c, arm_config(spec, arm, Config(registry)));
    RECUR_ASSIGN_OR_RETURN(std::string v, c.get(fmt::format("kernel.{}.variant", k->name)));
    if (v != "auto" && k->find_variant(v) == nullptr)
      return invalid_argument("{}: arm {}: kernel {} has no variant '{}'", spec.path, arm.name, k->name, v);
  }
  return ok_status();
}

// The first call in `e` that makes request `r` (for the caret of an error).
const Expr* find_call(const Expr& e, const MetricRequest& r) {
  if (e.op == ExprOp::kCall) return request_for_call(e) == r ? &e : nullptr;
  for (const Expr* side : {e.lhs.get(), e.rhs.get()})
    if (side)
      if (const Expr* found = find_call(*side, r)) return found;
  return nullptr;
}

// Check metrics compare two arms' outputs, which only means something on one kernel and shape;
// time ratios across kernels are measured interleaved (probe::bench_kernel_targets).
Status check_arm_pairs(const GateSpec& spec, const Condition& c, size_t first_request) {
  for (size_t i = first_request; i < spec.requests.size(); ++i) {
    const MetricRequest& r = spec.requests[i];
    if (r.def->source != MetricSource::kKernelCheck || r.vs.empty()) continue;
    const KernelWorkload a = arm_kernel_workload(spec, *spec.find_arm(r.arm));
    const KernelWorkload b = arm_kernel_workload(spec, *spec.find_arm(r.vs));
    if (a.kernel == b.kernel && a.shape == b.shape) continue;
    const Expr* call = find_call(c.expr, r);
    return unexpected(c.source.error(
        c.text, call ? call->offset : 0,
        fmt::format("{} compares the outputs of arms on different kernels or shapes ({} {} vs {} {}); check metrics "
                    "compare variants of one kernel at one shape: use {}({}) against the float64 reference",
                    r.key(), a.kernel, a.shape.empty() ? "(default shape)" : a.shape, b.kernel,
                    b.shape.empty() ? "(default shape)" : b.shape, r.def->name, r.arm)));
  }
  return ok_status();
}

}  // namespace

const Arm* GateSpec::find_arm(std::string_view arm_name) const {
  for (const Arm& a : arms)
    if (a.name == arm_name) return &a;
  return nullptr;
}

KernelWorkload arm_kernel_workload(const GateSpec& spec, const Arm& arm) {
  KernelWorkload w = *spec.kernel;
  if (!arm.kernel.empty()) w.kernel = arm.kernel;
  if (!arm.shape.empty()) w.shape = arm.shape;
  return w;
}

KernelWorkload arm_kernel_workload(const GateSpec& spec, std::string_view arm_name) {
  return arm_kernel_workload(spec, *spec.find_arm(arm_name));
}

Result<Config> arm_config(const GateSpec& spec, const Arm& arm, const Config& base) {
  Config c = base;
  for (const auto& [k, v] : arm.knobs) {
    if (auto s = c.set(k, v); !s)
      return invalid_argument("{}: arm {}: {}", spec.path.empty() ? "gate" : spec.path, arm.name, s.error().message());
  }
  return c;
}

Result<GateSpec> parse_gate_spec(std::string_view toml_text, std::string_view path, const KnobRegistry& registry) {
  const std::string file = path.empty() ? "<gate spec>" : std::string(path);
  kernels::KernelRegistry::global();  // registers the kernels' variant knobs
  RECUR_ASSIGN_OR_RETURN(toml::table root, parse_toml(toml_text, file));
  GateSpec spec;
  spec.path = std::string(path);
  TomlTable top(root, file, "the top level");
  RECUR_ASSIGN_OR_RETURN(DocumentTitle title, read_title(top, file));
  spec.name = title.name;
  spec.description = title.description;

  RECUR_ASSIGN_OR_RETURN(auto workload, top.subtable("workload"));
  if (!workload)
    return parse_error("{}: missing [workload] (a [workload.engine], [workload.kernel] or [workload.program] table)", file);
  RECUR_ASSIGN_OR_RETURN(auto threads, workload->integer("threads", 0, 1024));
  if (threads) spec.threads = int(*threads);
  RECUR_ASSIGN_OR_RETURN(auto engine, workload->subtable("engine"));
  if (engine) {
    RECUR_ASSIGN_OR_RETURN(spec.engine, read_engine(*engine, spec.path));
  }
  RECUR_ASSIGN_OR_RETURN(auto kernel, workload->subtable("kernel"));
  if (kernel) {
    RECUR_ASSIGN_OR_RETURN(spec.kernel, read_kernel(*kernel));
  }
  RECUR_ASSIGN_OR_RETURN(auto program, workload->subtable("program"));
  if (program) {
    RECUR_ASSIGN_OR_RETURN(spec.program, read_program(*program, spec.path));
  }
  RECUR_RETURN_IF_ERROR(workload->finish());
  if (!spec.engine && !spec.kernel && !spec.program)
    return parse_error("{}: [workload] declares none of [workload.engine], [workload.kernel], [workload.program]", file);

  RECUR_ASSIGN_OR_RETURN(auto arms, top.subtable("arms"));
  if (!arms) return parse_error("{}: missing [arms]; expected e.g. [arms.baseline] and [arms.candidate]", file);
  RECUR_ASSIGN_OR_RETURN(spec.arms, read_arms(*arms, registry, spec.kernel));
  if (spec.kernel) RECUR_RETURN_IF_ERROR(check_kernel_arms(spec, registry));

  const toml::node* conds = top.find("conditions");
  if (conds == nullptr)
    return parse_error("{}: missing 'conditions' (an array of strings, at the top before any [table])", file);
  if (!conds->is_array() || conds->as_array()->empty())
    return unexpected(top.error_at(*conds, "conditions", "expected a non-empty array of strings"));
  RECUR_RETURN_IF_ERROR(top.finish());

  ConditionContext ctx;
  for (const Arm& a : spec.arms) ctx.arms.push_back(a.name);
  ctx.has_engine = spec.engine.has_value();
  ctx.has_kernel = spec.kernel.has_value();
  ctx.has_program = spec.program.has_value();
  const std::vector<std::string> lines = split_lines(toml_text);
  for (const toml::node& item : *conds->as_array()) {
    const size_t i = spec.conditions.size();
    if (!item.is_string())
      return unexpected(top.error_at(item, fmt::format("conditions[{}]", i), "expected a string"));
    Condition c;
    c.text = item.as_string()->get();
    c.source = condition_source(item, c.text, lines, file, i);
    RECUR_ASSIGN_OR_RETURN(c.expr, parse_expr(c.text, c.source));
    const size_t first_request = spec.requests.size();
    RECUR_RETURN_IF_ERROR(check_condition(c.expr, c.text, c.source, ctx, spec.requests));
    RECUR_RETURN_IF_ERROR(check_arm_pairs(spec, c, first_request));
    spec.conditions.push_back(std::move(c));
  }
  for (const MetricRequest& r : spec.requests) {
    if (r.def->source != MetricSource::kEngineThroughput) continue;
    const int runs = spec.engine ? spec.engine->runs : spec.program->runs;
    const std::string table = spec.engine ? "engine" : "program";
    // runs < 3 was written in the table (the defaults are 5): point at it.
    const toml::node* at = root.at_path(fmt::format("workload.{}.runs", table)).node();
    if (runs < 3)
      return parse_error("{}: [workload.{}] runs = {}: {} needs at least 3 runs for a confidence interval",
                         at != nullptr ? node_position(file, *at) : file, table, runs, r.key());
  }
  return spec;
}

Result<GateSpec> respec(const GateSpec& spec, std::vector<Arm> arms, const std::vector<std::string>& conditions) {
  GateSpec out = spec;
  out.arms = std::move(arms);
  out.conditions.clear();
  out.requests.clear();
  ConditionContext ctx;
  for (const Arm& a : out.arms) ctx.arms.push_back(a.name);
  ctx.has_engine = out.engine.has_value();
  ctx.has_kernel = out.kernel.has_value();
  ctx.has_program = out.program.has_value();
  for (size_t i = 0; i < conditions.size(); ++i) {
    Condition c;
    c.text = conditions[i];
    c.source = ExprSource{.file = spec.path, .line = 0, .column = 0, .label = fmt::format("derived condition {}", i + 1)};
    RECUR_ASSIGN_OR_RETURN(c.expr, parse_expr(c.text, c.source));
    const size_t first_request = out.requests.size();
    RECUR_RETURN_IF_ERROR(check_condition(c.expr, c.text, c.source, ctx, out.requests));
    RECUR_RETURN_IF_ERROR(check_arm_pairs(out, c, first_request));
    out.conditions.push_back(std::move(c));
  }
  return out;
}

Result<GateSpec> load_gate_spec(const std::string& path, const KnobRegistry& registry) {
  RECUR_ASSIGN_OR_RETURN(std::string text, read_text_file(path, "the gate spec"));
  return parse_gate_spec(text, path, registry);
}

}  // namespace recur::gate
