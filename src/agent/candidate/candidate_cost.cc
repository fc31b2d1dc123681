#include "candidate/candidate_cost.h"

#include <unistd.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "probe/callgrind_format.h"
#include "probe/kernel_harness.h"

namespace recur::agent {

namespace {

namespace fs = std::filesystem;

// One of the three counted runs: `calls` calls per request, each on its own fresh set or all on one.
struct CostPlan {
  const char* name;
  int calls;
  bool set_per_call;
};

Result<uint64_t> cost_total_instructions(const fs::path& dump) {
  std::ifstream in(dump);
  if (!in) return io_error("cost check: callgrind wrote no {}", dump.string());
  std::stringstream text;
  text << in.rdbuf();
  RECUR_ASSIGN_OR_RETURN(probe::CallgrindProfile p, probe::parse_callgrind(text.str()));
  if (p.total == 0) return internal_error("cost check: {} counts no instructions", dump.string());
  return p.total;
}

}  // namespace

Result<CostCount> count_candidate_cost(const kernels::KernelSpec& spec, const kernels::Shape& shape,
                                       const std::string& variant, const CostCheckOptions& o, std::random_device& rd) {
  if (o.requests < 1 || o.calls < 2) return invalid_argument("cost check: needs requests >= 1 and calls >= 2");
  std::error_code ec;
  fs::create_directories(o.dir, ec);
  if (ec) return io_error("cost check: cannot create {}: {}", o.dir, ec.message());
  // A runner started by root runs as nobody (candidate_runner_client.h); callgrind writes as it.
  if (geteuid() == 0 && chown(o.dir.c_str(), 65534, 65534) != 0)
    return io_error("cost check: cannot hand {} to nobody: {}", o.dir, std::strerror(errno));
  RECUR_ASSIGN_OR_RETURN(probe::KernelInstance inst, probe::KernelInstance::make(spec, shape));
  const SharedLayout set = shared_layout(inst.inputs(), inst.outputs());
  // The same inputs for all three runs: a warm-up set, then `calls` sets per request.
  std::vector<uint64_t> seeds(1 + size_t(o.requests * o.calls));
  for (uint64_t& s : seeds) s = evaluator_seed(rd);

  const std::array<CostPlan, 3> plans = {{{"one", 1, false}, {"fresh", o.calls, true}, {"repeat", o.calls, false}}};
  std::array<std::unique_ptr<KernelRunnerProcess>, 3> runners;
  for (size_t p = 0; p < plans.size(); ++p) {  // all started first: valgrind's start-ups overlap
    RunnerLaunch launch = o.runner;
    launch.argv.insert(launch.argv.begin(),
                       {o.valgrind, "--tool=callgrind",
                        fmt::format("--callgrind-out-file={}/cost.{}.out", o.dir, plans[p].name)});
    launch.stderr_path = fmt::format("{}/cost.{}.log", o.dir, plans[p].name);
    RECUR_ASSIGN_OR_RETURN(runners[p], KernelRunnerProcess::start(launch));
  }
  std::array<uint64_t, 3> totals{};
  for (size_t p = 0; p < plans.size(); ++p) {
    KernelRunnerProcess& runner = *runners[p];
    RECUR_ASSIGN_OR_RETURN(char* mem, runner.shared(set.total * size_t(o.calls)));
    auto fill = [&](size_t at, uint64_t seed) {
      inst.fill_inputs(probe::Distribution::kNormal, seed);
      for (size_t t = 0; t < set.offsets.size(); ++t) {
        char* dst = mem + at * set.total + set.offsets[t];
        if (t < inst.inputs().size()) std::memcpy(dst, inst.inputs()[t].data(), set.bytes[t]);
        else std::memset(dst, 0, set.bytes[t]);
      }
    };
    auto offsets_of = [&](size_t at, std::vector<uint64_t>& out) {
      for (uint64_t off : set.offsets) out.push_back(at * set.total + off);
    };
    RunnerRun warm{.kernel = spec.name, .variant = variant, .shape = shape.to_string(), .iters = 1, .offsets = {}};
    fill(0, seeds[0]);
    offsets_of(0, warm.offsets);
    RECUR_RETURN_IF_ERROR(runner.run(warm));
    for (int k = 0; k < o.requests; ++k) {
      RunnerRun r{.kernel = spec.name, .variant = variant, .shape = shape.to_string(), .iters = plans[p].calls,
                  .offsets = {}};
      for (int c = 0; c < plans[p].calls; ++c) {
        const size_t at = plans[p].set_per_call ? size_t(c) : 0;
        if (plans[p].set_per_call || c == 0) fill(at, seeds[1 + size_t(k * o.calls + c)]);
        if (plans[p].calls > 1) offsets_of(at, r.offsets);  // one set per call, also when they are the same
      }
      if (plans[p].calls == 1) offsets_of(0, r.offsets);
      RECUR_RETURN_IF_ERROR(runner.run(r));
    }
    RECUR_RETURN_IF_ERROR(runner.finish(o.runner.reply_timeout_s));
    RECUR_ASSIGN_OR_RETURN(totals[p], cost_total_instructions(fmt::format("{}/cost.{}.out", o.dir, plans[p].name)));
  }
  const double calls = double(o.requests) * double(o.calls - 1);
  CostCount c;
  c.fresh_call = (double(totals[1]) - double(totals[0])) / calls;
  c.repeat_call = c.fresh_call - (double(totals[1]) - double(totals[2])) / calls;
  if (c.fresh_call <= 0)
    return internal_error("cost check: {} fresh calls counted {} instructions, not more than one call ({})",
                          o.calls, totals[1], totals[0]);
  return c;
}

}  // namespace recur::agent
