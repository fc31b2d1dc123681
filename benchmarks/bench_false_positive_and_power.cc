// The "Done when" figures of bench (docs/performance.md, "## Probes"):
//   false positives: an A/A experiment (one arm against itself) repeated --aa times; the rate of
//                    faster/slower verdicts must be <= 5%;
//   power:           B does 3% more work than A (gemv over 1.03x the rows: real extra loads and
//                    FMAs, not a sleep), --power trials each under a 10 s budget; the rate of
//                    `slower` verdicts must be >= 90%.
// Each trial is a full bench_compare (warm-up, calibration, ABBA + in-run A/A rounds, adaptive
// stop) with the default options, exactly what `recur bench` runs.
//   bench_false_positive_and_power [--aa 100] [--power 20] [--budget-s 8] [--extra 0.03]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/aligned_buffer.h"
#include "kernels/gemv/gemv.h"
#include "probe/bench.h"
#include "probe/stats.h"

using namespace recur;
using namespace recur::probe;

namespace {

struct Tally {
  std::map<std::string, int> verdicts;
  std::vector<double> seconds, rounds, ratios;
};

void print_tally(const char* name, const Tally& t, int trials) {
  fmt::print("{}: {} trials;", name, trials);
  for (const auto& [v, n] : t.verdicts) fmt::print(" {} {}", v, n);
  fmt::print("\n  wall time per trial: median {:.2f} s, max {:.2f} s; rounds median {:.0f}; ratio median {:.4f}\n",
             median(t.seconds), *std::max_element(t.seconds.begin(), t.seconds.end()), median(t.rounds), median(t.ratios));
}

}  // namespace

int main(int argc, char** argv) {
  int aa_trials = 100, power_trials = 20;
  double budget = 8, extra = 0.03;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--aa")) aa_trials = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--power")) power_trials = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--budget-s")) budget = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--extra")) extra = std::atof(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: %s [--aa N] [--power N] [--budget-s S] [--extra F]\n", argv[0]);
      return 2;
    }
  }
  const int64_t rows = 1000, n = 1024;
  const int64_t rows_b = rows + int64_t(double(rows) * extra + 0.5);
  AlignedBuffer w = make_aligned<float>(size_t(rows_b * n)), x = make_aligned<float>(size_t(n)),
                y = make_aligned<float>(size_t(rows_b));
  for (size_t i = 0; i < size_t(rows_b * n); ++i) w.as<float>()[i] = float(i % 97) * 0.01f;
  for (size_t i = 0; i < size_t(n); ++i) x.as<float>()[i] = float(i % 13) * 0.1f;
  auto gemv_rows = [&](int64_t m) {
    return [&, m](int64_t iters) {
      for (int64_t i = 0; i < iters; ++i)
        kernels::gemv_avx2(w.as<float>().data(), x.as<float>().data(), y.as<float>().data(), m, n);
    };
  };
  BenchArm a{"gemv_1000", gemv_rows(rows)};
  BenchArm b{"gemv_1030", gemv_rows(rows_b)};
  BenchOptions o;
  o.budget_s = budget;

  fmt::print("workload: gemv_avx2 {}x{} fp32; B = {} rows ({:.1f}% more work); budget {} s per trial\n", rows, n, rows_b,
             100.0 * double(rows_b - rows) / double(rows), budget);
  auto run = [&](const BenchArm& base, const BenchArm& cand, int trials, const char* name) {
    Tally t;
    for (int i = 0; i < trials; ++i) {
      o.seed = uint64_t(i + 1);
      auto t0 = std::chrono::steady_clock::now();
      BenchResult r = bench_compare(base, cand, o);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      ++t.verdicts[std::string(bench_verdict_name(r.decision.verdict))];
      t.seconds.push_back(s);
      t.rounds.push_back(r.rounds);
      t.ratios.push_back(r.decision.ratio);
      std::fprintf(stderr, "%s %d/%d: %s ratio %.4f [%.4f, %.4f] thr %.4f rounds %d %.2f s\n", name, i + 1, trials,
                   std::string(bench_verdict_name(r.decision.verdict)).c_str(), r.decision.ratio, r.decision.ratio_lo,
                   r.decision.ratio_hi, r.decision.threshold, r.rounds, s);
    }
    print_tally(name, t, trials);
    return t;
  };
  int fail = 0;
  if (aa_trials > 0) {
    Tally t = run(a, a, aa_trials, "A/A");
    int fp = t.verdicts["faster"] + t.verdicts["slower"];
    double rate = double(fp) / aa_trials;
    fmt::print("  false-positive rate: {}/{} = {:.1f}% (target <= 5%)\n", fp, aa_trials, 100 * rate);
    fail |= rate > 0.05;
  }
  if (power_trials > 0) {
    Tally t = run(a, b, power_trials, "3% slowdown");
    int hit = t.verdicts["slower"];
    double rate = double(hit) / power_trials;
    double max_s = *std::max_element(t.seconds.begin(), t.seconds.end());
    fmt::print("  detection rate: {}/{} = {:.0f}% (target >= 90%), slowest trial {:.2f} s (limit 10 s)\n", hit, power_trials,
               100 * rate, max_s);
    fail |= rate < 0.9 || max_s >= 10;
  }
  return fail;
}
