// `recur trace stats|convert|merge`: summarise, convert (Chrome JSON <-> Perfetto protobuf) and
// merge trace files. Readers take Chrome JSON (plain or .gz, Kineto's included) and Perfetto
// protobuf; the output format follows the output file's name (trace/trace_io.h).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/trace_input.h"
#include "trace/event_table.h"
#include "trace/trace_io.h"
#include "trace/trace_tools.h"

namespace recur::cli {
namespace {

using nlohmann::json;

struct StatsFlags {
  std::string path;
  trace::ReadLimits limits;
  bool json = false;
  size_t top = 10;
};

std::string phase_name(char ph) {
  if (ph >= 0x20 && ph < 0x7f) return std::string(1, ph);
  return fmt::format("\\x{:02x}", unsigned(static_cast<unsigned char>(ph)));
}

int run_stats(const StatsFlags& f) {
  auto t = trace::read_trace(f.path, f.limits);
  if (!t) return report_failure(t.error());
  trace::TraceStats s = trace::trace_stats(*t, f.top);
  std::vector<std::string> notes = trace::recovery_notes(t->info());
  if (f.json) {
    json phases = json::object();
    for (auto [ph, n] : s.phases) phases[phase_name(ph)] = n;
    json top = json::array();
    for (const auto& n : s.top_names) {
      top.push_back({{"name", n.name}, {"count", n.count}, {"total_dur_us", double(n.total_dur_ns) / 1e3}});
    }
    json out = {{"path", f.path},
                {"events", s.events},
                {"tracks", s.tracks},
                {"processes", s.processes},
                {"first_ts_us", double(s.first_ts_ns) / 1e3},
                {"span_us", double(s.span_ns()) / 1e3},
                {"phases", phases},
                {"top_names", top},
                {"dropped_events", s.dropped_events},
                {"unmatched_end_events", s.unmatched_end_events},
                {"unclosed_begin_events", s.unclosed_begin_events},
                {"invalid_utf8_bytes", t->info().invalid_utf8_bytes},
                {"invalid_utf8_offsets", t->info().invalid_utf8_offsets},
                {"notes", notes},
                {"rank", s.rank ? json(*s.rank) : json(nullptr)},
                {"world_size", s.world_size ? json(*s.world_size) : json(nullptr)}};
    print_json(out);
    return kExitOk;
  }
  fmt::print("{}: {} events on {} tracks ({} processes), span {:.3f} ms\n", f.path, s.events,
             s.tracks, s.processes, double(s.span_ns()) / 1e6);
  std::string phases;
  for (auto [ph, n] : s.phases) phases += fmt::format(" {}={}", phase_name(ph), n);
  fmt::print("  phases:{}\n", phases);
  if (s.rank) fmt::print("  rank {} of {}\n", *s.rank, s.world_size ? fmt::format("{}", *s.world_size) : "?");
  fmt::print("  dropped events: {}\n", s.dropped_events);
  for (const std::string& note : notes) fmt::print("  {}\n", note);
  fmt::print("  top names by total duration:\n");
  for (const auto& n : s.top_names) {
    fmt::print("    {:>12.3f} ms {:>9}x  {}\n", double(n.total_dur_ns) / 1e6, n.count, n.name);
  }
  return kExitOk;
}

struct ConvertFlags {
  std::string in, out, format;
  bool json = false;
  trace::ReadLimits limits;
};

Result<trace::TraceFormat> output_format(const std::string& path, const std::string& name) {
  if (name.empty()) return trace::format_for_path(path);
  if (name == "json") return trace::TraceFormat::kChromeJson;
  return trace::TraceFormat::kPerfetto;
}

int run_convert(const ConvertFlags& f) {
  auto t = trace::read_trace(f.in, f.limits);
  if (!t) return report_failure(t.error());
  warn_recovery_notes(f.in, t->info());
  auto format = output_format(f.out, f.format);
  if (!format) return report_failure(format.error());
  if (auto s = trace::write_trace(*t, f.out, *format); !s) return report_failure(s.error());
  const bool json_format = *format == trace::TraceFormat::kChromeJson;
  if (f.json) {
    print_json({{"input", f.in}, {"output", f.out}, {"format", json_format ? "json" : "perfetto"}, {"events", t->size()},
                {"processes", t->processes().size()}, {"tracks", t->tracks().size()}});
    return kExitOk;
  }
  std::fprintf(stderr, "recur: wrote %zu events to %s (%s)\n", t->size(), f.out.c_str(),
               json_format ? "Chrome JSON" : "Perfetto protobuf");
  return kExitOk;
}

struct MergeFlags {
  std::vector<std::string> inputs;
  std::string out, format;
  bool json = false;
  trace::ReadLimits limits;
};

int run_merge(const MergeFlags& f) {
  std::vector<trace::EventTable> tables;
  for (const std::string& path : f.inputs) {
    auto t = trace::read_trace(path, f.limits);
    if (!t) return report_failure(t.error());
    warn_recovery_notes(path, t->info());
    tables.push_back(std::move(*t));
  }
  auto merged = trace::merge_traces(tables);
  if (!merged) return report_failure(merged.error());
  auto format = output_format(f.out, f.format);
  if (!format) return report_failure(format.error());
  if (auto s = trace::write_trace(*merged, f.out, *format); !s) return report_failure(s.error());
  if (f.json) {
    print_json({{"output", f.out}, {"inputs", f.inputs.size()}, {"events", merged->size()},
                {"processes", merged->processes().size()}, {"tracks", merged->tracks().size()}});
  } else {
    fmt::print("{}: {} events from {} traces ({} processes, {} tracks)\n", f.out, merged->size(),
               f.inputs.size(), merged->processes().size(), merged->tracks().size());
  }
  return kExitOk;
}

void register_trace(CLI::App& app, Invocation& inv) {
  auto* cmd = app.add_subcommand("trace", "Trace files: summarise, convert (Chrome JSON <-> Perfetto), merge ranks");
  cmd->require_subcommand(1);

  auto stats = std::make_shared<StatsFlags>();
  auto* st = cmd->add_subcommand("stats", "Events, tracks, span, phases, top names and dropped events of a trace");
  st->add_option("FILE", stats->path, "trace: Chrome JSON (.json, .json.gz, Kineto) or Perfetto protobuf")->required();
  st->add_flag("--json", stats->json, "Print a JSON object");
  st->add_option("--top", stats->top, "names to list")->check(CLI::Range(0, 1000))->capture_default_str();
  add_max_trace_bytes_option(st, stats->limits);
  st->callback([&inv, stats] { inv.run = [stats] { return run_stats(*stats); }; });

  auto conv = std::make_shared<ConvertFlags>();
  auto* cv = cmd->add_subcommand("convert", "Convert a trace: the output format follows OUT's name (.json, .json.gz: "
                                            "Chrome JSON; else Perfetto protobuf) or --format");
  cv->add_option("IN", conv->in, "input trace")->required();
  cv->add_option("OUT", conv->out, "output trace")->required();
  cv->add_option("--format", conv->format, "json or perfetto (default: from OUT)")
      ->check(CLI::IsMember({"json", "perfetto"}));
  cv->add_flag("--json", conv->json, "Print a JSON summary");
  add_max_trace_bytes_option(cv, conv->limits);
  cv->callback([&inv, conv] { inv.run = [conv] { return run_convert(*conv); }; });

  auto merge = std::make_shared<MergeFlags>();
  auto* mg = cmd->add_subcommand("merge", "Merge the traces of several ranks into one file (pids kept apart by rank)");
  mg->add_option("INPUTS", merge->inputs, "input traces, one per rank (rank from distributedInfo, else order)")
      ->required();
  mg->add_option("-o,--output", merge->out, "output trace")->required();
  mg->add_option("--format", merge->format, "json or perfetto (default: from the output name)")
      ->check(CLI::IsMember({"json", "perfetto"}));
  mg->add_flag("--json", merge->json, "Print a JSON summary");
  add_max_trace_bytes_option(mg, merge->limits);
  mg->callback([&inv, merge] { inv.run = [merge] { return run_merge(*merge); }; });
}

}  // namespace

RECUR_CLI_COMMAND(trace, register_trace);

}  // namespace recur::cli
