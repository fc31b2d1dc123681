// The child of journal_crash_test: a stand-in for the agent loop that writes experiments into a
// journal until it has `steps` of them, resuming whatever an earlier (killed) child left.
//   journal_crash_child DB RUN STEPS MAX_SLEEP_US
// After each start() returns it prints "start STEP", after each finish() "done STEP" on stdout
// (unbuffered), so the parent knows what was committed before it sent SIGKILL, and can aim a kill
// inside a running experiment. Exit 0 when all steps are done.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include <fmt/format.h>

#include "journal/journal.h"

namespace {

using namespace recur;
using namespace recur::agent;

// Every step's experiment is a function of the step, so a resumed child plans the same one.
ExperimentSpec spec_for(int64_t step) {
  return {.hypothesis = fmt::format("hypothesis {}", step),
          .probe = step % 2 ? "bench.kernel" : "check.kernel",
          .tier = int(1 + step % 2),
          .config_diff = {{"kernel.gemv.variant", step % 2 ? "avx2" : "scalar"}, {"step", fmt::format("{}", step)}}};
}

int die(const Error& e) {
  std::fprintf(stderr, "journal_crash_child: %s\n", e.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: journal_crash_child DB RUN STEPS MAX_SLEEP_US\n");
    return 2;
  }
  const std::string db = argv[1], run_name = argv[2];
  const int64_t steps = std::atoll(argv[3]);
  const int max_sleep_us = std::atoi(argv[4]);
  std::mt19937 rng{unsigned(getpid())};
  // A probe's work (up to max_sleep_us) and the loop's thinking between experiments (a tenth of
  // that): most of a step's time is inside a running experiment, where kills are most telling.
  auto sleep_up_to = [&](int us) {
    if (us > 0) usleep(useconds_t(std::uniform_int_distribution<int>(0, us)(rng)));
  };
  auto work = [&] { sleep_up_to(max_sleep_us); };

  auto j = Journal::open(db);
  if (!j) return die(j.error());
  auto run = (*j)->begin_run(run_name, "crash-test", {{"engine.tp", "1"}});
  if (!run) return die(run.error());
  auto plan = (*j)->resume_plan(run->id, /*max_attempts=*/100);
  if (!plan) return die(plan.error());

  auto say = [](const std::string& line) -> Status {
    if (write(1, line.data(), line.size()) < 0) return io_error("stdout: write failed");
    return ok_status();
  };
  auto execute = [&](int64_t step) -> Status {
    RECUR_ASSIGN_OR_RETURN(auto planned, (*j)->plan(run->id, step, spec_for(step)));  // idempotent
    RECUR_ASSIGN_OR_RETURN(auto started, (*j)->start(run->id, step));
    RECUR_RETURN_IF_ERROR(say(fmt::format("start {}\n", step)));
    work();
    Feedback f;
    f.probe = planned.spec.probe;
    f.tier = planned.spec.tier;
    f.cost_s = 0.001;
    f.subject = fmt::format("step {}", step);
    f.hypothesis = planned.spec.hypothesis;
    f.verdict = step % 3 == 0 ? Verdict::kConfirmed : Verdict::kRefuted;
    f.add_metric("step", double(step));
    f.notes.push_back(fmt::format("pid {} attempt {}", getpid(), started.attempts));
    RECUR_RETURN_IF_ERROR((*j)->finish(run->id, step, f, step % 3 == 0 ? Decision::kKeep : Decision::kRevert));
    return say(fmt::format("done {}\n", step));
  };

  for (int64_t step : plan->rerun)
    if (auto s = execute(step); !s) return die(s.error());
  for (int64_t step : plan->pending)
    if (auto s = execute(step); !s) return die(s.error());
  for (int64_t step = plan->next_step; step < steps; ++step) {
    sleep_up_to(max_sleep_us / 10);
    if (auto s = execute(step); !s) return die(s.error());
  }
  if (auto s = (*j)->end_run(run->id, "done", fmt::format("{} experiments", steps)); !s) return die(s.error());
  return 0;
}
