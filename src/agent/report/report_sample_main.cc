// agent_report_sample DIR: writes the report tests' synthetic run into DIR/journal.db
// (report_sample.h), for tests/agent_report_cli_test.sh.
#include <cstdio>

#include "report/report_sample.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: agent_report_sample DIR\n");
    return 2;
  }
  auto run = recur::agent::write_sample_run(argv[1]);
  if (!run) {
    std::fprintf(stderr, "agent_report_sample: %s\n", run.error().to_string().c_str());
    return 1;
  }
  std::printf("%s\n", run->journal_path.c_str());
  return 0;
}
