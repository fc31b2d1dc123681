// Runs the recur binary as a user would and captures what it prints, for end-to-end tests.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace recur::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs RECUR_BINARY with args (no shell), with extra environment variables set.
CliResult run_recur(const std::vector<std::string>& args,
                    const std::map<std::string, std::string>& env = {});

// A fresh temporary directory, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace recur::testing
