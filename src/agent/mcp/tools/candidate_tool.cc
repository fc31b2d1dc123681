// candidate_build: a client's patch built in a git worktree of the served folder and judged
// (check against float64, bench against the main tree's best variant) by a `recur candidate
// build` child. Registered only with --allow-candidates; the build command and runner are the
// server's, so a client chooses the code but not the commands.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "mcp/tools/builtin_tools.h"

namespace recur::mcp {

using nlohmann::json;

Tool make_candidate_build_tool(const ToolEnv& env) {
  Tool t;
  t.name = "candidate_build";
  t.title = "Build and judge a code change";
  t.description = "Apply a unified diff in a fresh git worktree of the served tree (the tree itself is never "
                  "modified), build its kernel runner, check the kernel variant it adds against the float64 "
                  "reference with fresh inputs and bench it against the tree's best variant (recur candidate build; "
                  "tier 2). Returns the Feedback record: verdict failed with the reason (does not apply, the "
                  "compiler's first errors, check's worst element) or the bench ratio with a 95% CI.";
  auto word = [](const char* what) { return json{{"type", "string"}, {"maxLength", 100}, {"description", what}}; };
  json props = {{"patch", {{"type", "string"}, {"minLength", 1}, {"maxLength", 262144},
                           {"description", "the change: a unified diff as `git diff` writes it"}}},
                {"kernel", word("kernel whose variant the patch adds (default: the only one)")},
                {"variant", word("variant to judge (default: the one the patch adds)")},
                {"shape", word("shape for check and bench, e.g. M64,N4096")},
                {"hypothesis", {{"type", "string"}, {"maxLength", 500}}},
                {"budget_s", {{"type", "number"}, {"minimum", 0.05}, {"maximum", 60},
                              {"description", "bench seconds (default 4)"}}}};
  t.input_schema = object_schema(std::move(props), {"patch"});
  t.output_schema = feedback_schema();
  t.call = [env](const json& args, const CallBudget& budget) {
    for (const char* key : {"kernel", "variant", "shape"})
      if (args.contains(key))
        if (Status s = check_word(args[key].get<std::string>(), fmt::format("arguments.{}", key)); !s)
          return tool_error(s.error().message());
    // The patch travels as a file ($TMPDIR, as the candidate's worktree does).
    std::error_code ec;
    std::string tmpl = (std::filesystem::temp_directory_path(ec) / "recur-mcp-candidate-XXXXXX.patch").string();
    const int fd = ec ? -1 : mkstemps(tmpl.data(), 6);
    if (fd < 0) return tool_error("candidate_build: cannot create a temporary patch file");
    ::close(fd);
    const char* path = tmpl.c_str();
    {
      std::ofstream out(path, std::ios::binary);
      out << args["patch"].get<std::string>();
      if (!out.flush()) {
        std::remove(path);
        return tool_error(fmt::format("candidate_build: cannot write the patch to {}", path));
      }
    }
    std::vector<std::string> argv = {"candidate", "build", "--repo", env.root, "--patch", path, "--json", "--quiet",
                                     "--timeout-s", fmt::format("{:.0f}", std::max(1.0, budget.timeout_s - 5))};
    if (!env.candidate_build_cmd.empty()) argv.insert(argv.end(), {"--build-cmd", env.candidate_build_cmd});
    if (!env.candidate_runner.empty()) argv.insert(argv.end(), {"--runner", env.candidate_runner});
    add_option(argv, args, "kernel", "--kernel");
    add_option(argv, args, "variant", "--variant");
    add_option(argv, args, "shape", "--shape");
    add_option(argv, args, "hypothesis", "--hypothesis");
    add_option(argv, args, "budget_s", "--budget-s");
    ToolResult r = run_probe(env, argv, budget);
    std::remove(path);
    return r;
  };
  return t;
}

}  // namespace recur::mcp
