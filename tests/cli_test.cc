// The recur binary as users and agents see it: exit codes (0 ok, 1 failure, 2 usage),
// results on stdout, logs on stderr, --help on every verb, --json that parses.
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace recur::testing {
namespace {

using nlohmann::json;

TEST(Cli, VersionPrintsOnStdout) {
  CliResult r = run_recur({"version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("recur 0."), std::string::npos) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;

  CliResult j = run_recur({"version", "--json"});
  ASSERT_EQ(j.exit_code, 0);
  json v = json::parse(j.out);
  EXPECT_TRUE(v["version"].is_string());
  EXPECT_TRUE(v["isa"].is_string());
}

TEST(Cli, UsageErrorsExitTwoWithAMessageOnStderr) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{}, {"--bogus", "version"}, {"version", "--bogus"}, {"no-such-verb"},
        {"--isa", "sse9", "version"}, {"--log-level", "loud", "version"}}) {
    CliResult r = run_recur(args);
    EXPECT_EQ(r.exit_code, 2) << "args: " << (args.empty() ? "(none)" : args[0]);
    EXPECT_FALSE(r.err.empty());
    EXPECT_TRUE(r.out.empty()) << "stdout is for results only: " << r.out;
  }
}

TEST(Cli, EveryVerbHasHelp) {
  CliResult top = run_recur({"--help"});
  ASSERT_EQ(top.exit_code, 0);
  for (const char* verb : {"version", "sysinfo", "knobs"}) {
    EXPECT_NE(top.out.find(verb), std::string::npos) << verb << " missing from --help";
    CliResult r = run_recur({verb, "--help"});
    EXPECT_EQ(r.exit_code, 0) << verb;
    EXPECT_NE(r.out.find("--json"), std::string::npos) << verb << " --help does not mention --json";
  }
}

TEST(Cli, IsaFlagLowersDispatch) {
  CliResult r = run_recur({"--isa", "scalar", "version", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["isa"], "scalar");
  CliResult e = run_recur({"version", "--json"}, {{"RECUR_ISA", "scalar"}});
  EXPECT_EQ(json::parse(e.out)["isa"], "scalar");
}

// Measures the roofline once (about 2 s), then reads it back from the cache.
TEST(Cli, SysinfoMeasuresThenCaches) {
  TempDir cache;
  std::map<std::string, std::string> env = {{"RECUR_CACHE_DIR", cache.path()}};
  CliResult first = run_recur({"sysinfo", "--json"}, env);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  json a = json::parse(first.out);
  EXPECT_FALSE(a["from_cache"].get<bool>());
  EXPECT_GE(a["logical_cpus"].get<int>(), 1);
  for (const char* peak : {"read_bw_1t", "read_bw_all", "fp32_fma_1t", "fp32_fma_all", "int8_dot_1t"}) {
    const json& p = a["roofline"][peak];
    EXPECT_GT(p["median"].get<double>(), 0) << peak;
    EXPECT_LE(p["min"].get<double>(), p["median"].get<double>()) << peak;
    EXPECT_GE(p["max"].get<double>(), p["median"].get<double>()) << peak;
    EXPECT_GE(p["samples"].get<int>(), 5) << peak;
    EXPECT_GT(p["elapsed_s"].get<double>(), 0) << peak;
    EXPECT_FALSE(p["method"].get<std::string>().empty()) << peak;
  }
  EXPECT_NE(first.err.find("measuring"), std::string::npos) << "progress goes to stderr";

  CliResult second = run_recur({"sysinfo", "--json"}, env);
  ASSERT_EQ(second.exit_code, 0);
  json b = json::parse(second.out);
  EXPECT_TRUE(b["from_cache"].get<bool>());
  EXPECT_EQ(b["roofline"]["read_bw_1t"]["median"], a["roofline"]["read_bw_1t"]["median"]);

  CliResult human = run_recur({"sysinfo"}, env);
  EXPECT_NE(human.out.find("read bandwidth"), std::string::npos);
}

TEST(Cli, SysinfoRecoversFromACorruptCache) {
  TempDir cache;
  {
    std::FILE* f = std::fopen((cache.path() + "/sysinfo.json").c_str(), "w");
    std::fputs("{\"schema\": 1, \"machine\": 7", f);
    std::fclose(f);
  }
  CliResult r = run_recur({"sysinfo", "--json"}, {{"RECUR_CACHE_DIR", cache.path()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("unreadable cache"), std::string::npos) << r.err;
  EXPECT_FALSE(json::parse(r.out)["from_cache"].get<bool>());
}

}  // namespace
}  // namespace recur::testing

namespace recur::testing {
namespace {

TEST(Cli, ModelInspectReadsGgufAndExplainsBadFiles) {
  std::string good = std::string(RECUR_SOURCE_DIR) + "/fuzz/corpus/fuzz_gguf_reader/small.gguf";
  CliResult r = run_recur({"model", "inspect", good, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["version"], 3);
  ASSERT_EQ(j["tensors"].size(), 2u);
  EXPECT_EQ(j["tensors"][0]["type"], "Q8_0");
  EXPECT_EQ(j["metadata"]["general.architecture"], "llama");

  CliResult bad = run_recur({"model", "inspect", std::string(RECUR_SOURCE_DIR) + "/README.md"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("README.md: byte 0: not a GGUF file"), std::string::npos) << bad.err;
  EXPECT_TRUE(bad.out.empty());

  EXPECT_EQ(run_recur({"model", "inspect"}).exit_code, 2);
}

}  // namespace
}  // namespace recur::testing

namespace recur::testing {
namespace {

TEST(Cli, KnobsListAndSetValidates) {
  CliResult r = run_recur({"--set", "core.isa=scalar", "knobs", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json knobs = nlohmann::json::parse(r.out);
  bool found = false;
  for (const auto& k : knobs) {
    if (k["name"] != "core.isa") continue;
    found = true;
    EXPECT_EQ(k["value"], "scalar");
    EXPECT_EQ(k["default"], "auto");
    EXPECT_EQ(k["components"][0], "core:dispatch");
  }
  EXPECT_TRUE(found);
  CliResult v = run_recur({"--set", "core.isa=scalar", "version", "--json"});
  EXPECT_EQ(nlohmann::json::parse(v.out)["isa"], "scalar");

  CliResult bad = run_recur({"--set", "core.isa=sse9", "version"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("not one of auto, scalar, avx2, avx512"), std::string::npos) << bad.err;
  CliResult unknown = run_recur({"--set", "no.such.knob=1", "version"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown knob 'no.such.knob'"), std::string::npos);
  EXPECT_EQ(run_recur({"--set", "novalue", "version"}).exit_code, 2);
}

}  // namespace
}  // namespace recur::testing

namespace recur::testing {
namespace {

TEST(Cli, ModelNewThenGenerate) {
  TempDir dir;
  std::string path = dir.path() + "/tiny.gguf";
  CliResult made = run_recur({"model", "new", path, "--dim", "64", "--layers", "2", "--heads", "4", "--kv-heads", "2",
                              "--vocab", "512", "--dtype", "q8_0", "--seed", "9"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.err.find("q8_0"), std::string::npos);
  CliResult info = run_recur({"model", "inspect", path, "--json"});
  ASSERT_EQ(info.exit_code, 0);
  nlohmann::json j = nlohmann::json::parse(info.out);
  EXPECT_EQ(j["metadata"]["llama.block_count"], 2);
  EXPECT_EQ(j["metadata"]["tokenizer.ggml.tokens"]["count"], 512);

  CliResult a = run_recur({"generate", "-m", path, "-p", "hello", "-n", "8", "--json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  nlohmann::json g = nlohmann::json::parse(a.out);
  EXPECT_EQ(g["generated_tokens"], 8);
  EXPECT_GT(g["decode_tok_s"].get<double>(), 0);
  // The prompt's ids as generate() ran them, BOS first (benchmarks/gguf_interop_llamacpp.sh
  // compares them with llama.cpp's tokenizer).
  ASSERT_EQ(g["prompt_ids"].size(), g["prompt_tokens"].get<size_t>());
  EXPECT_EQ(g["prompt_ids"][0], 1);
  CliResult b = run_recur({"generate", "-m", path, "-p", "hello", "-n", "8", "--json"});
  EXPECT_EQ(nlohmann::json::parse(b.out)["tokens"], g["tokens"]) << "greedy generation is deterministic";

  CliResult streamed = run_recur({"generate", "-m", path, "-p", "hello", "-n", "4"});
  ASSERT_EQ(streamed.exit_code, 0);
  EXPECT_NE(streamed.err.find("decode 4 tokens"), std::string::npos) << streamed.err;
  EXPECT_FALSE(streamed.out.empty());

  CliResult bench = run_recur({"engine", "bench", "-m", path, "--prefill", "8", "--decode", "4", "--runs", "2", "--json"},
                              {{"RECUR_CACHE_DIR", dir.path()}});
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  nlohmann::json fb = nlohmann::json::parse(bench.out);
  EXPECT_EQ(fb["probe"], "bench.engine");
  EXPECT_EQ(fb["tier"], 3);
  EXPECT_GT(fb["metrics"][1]["value"].get<double>(), 0);
  EXPECT_EQ(fb["metrics"][1]["name"], "decode_tok_s");

  EXPECT_EQ(run_recur({"model", "new", path, "--vocab", "10"}).exit_code, 2);
  EXPECT_EQ(run_recur({"generate", "-m", path, "--temp", "-1"}).exit_code, 2);
  CliResult missing = run_recur({"generate", "-m", dir.path() + "/none.gguf"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("none.gguf"), std::string::npos);
}

// --dtype w8a8: I8 weights with an F32 <name>.scale per row, shown by inspect, run by generate.
TEST(Cli, ModelNewW8A8ThenGenerate) {
  TempDir dir;
  std::string path = dir.path() + "/w8a8.gguf";
  CliResult made = run_recur({"model", "new", path, "--dim", "64", "--layers", "2", "--heads", "4", "--vocab", "512",
                              "--dtype", "w8a8"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.err.find("w8a8"), std::string::npos) << made.err;
  CliResult info = run_recur({"model", "inspect", path, "--json"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  std::map<std::string, nlohmann::json> tensors;
  const nlohmann::json listed = nlohmann::json::parse(info.out);
  for (const auto& t : listed["tensors"]) tensors[t["name"].get<std::string>()] = t;
  EXPECT_EQ(tensors["blk.1.ffn_down.weight"]["type"], "I8");
  EXPECT_EQ(tensors["blk.1.ffn_down.weight.scale"]["type"], "F32");
  EXPECT_EQ(tensors["blk.1.ffn_down.weight.scale"]["dims"], nlohmann::json::array({64}));
  EXPECT_EQ(tensors["blk.1.attn_norm.weight"]["type"], "F32");
  CliResult g = run_recur({"generate", "-m", path, "-p", "hello", "-n", "6", "--json"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(nlohmann::json::parse(g.out)["generated_tokens"], 6);
}

}  // namespace
}  // namespace recur::testing
