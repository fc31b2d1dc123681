// Command-line helpers shared by the benchmark programs: the value after a flag, and
// comma-separated lists. Header-only; usage errors exit with status 2.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace recur::bench {

// The value of flag argv[i] (advancing i past it); exits 2 naming the program and flag if absent.
inline const char* flag_value(int argc, char** argv, int& i, const char* program) {
  if (i + 1 >= argc) {
    std::fprintf(stderr, "%s: %s needs a value\n", program, argv[i]);
    std::exit(2);
  }
  return argv[++i];
}

// "a,b,c" -> {"a", "b", "c"}
inline std::vector<std::string> split_list(const char* text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

// "1,2,4" -> {1, 2, 4} (atoi per item).
inline std::vector<int> int_list(const char* text) {
  std::vector<int> out;
  for (const std::string& item : split_list(text)) out.push_back(std::atoi(item.c_str()));
  return out;
}

}  // namespace recur::bench
