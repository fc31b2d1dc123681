#include "analyze/load_trace.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "trace/trace_io.h"
#include "trace/trace_tools.h"

namespace recur::analyze {
namespace {

void add_notes(const std::string& file, const trace::TraceInfo& info, std::vector<std::string>& notes) {
  for (const std::string& note : trace::recovery_notes(info)) notes.push_back(file + ": " + note);
}

bool is_trace_file(const std::string& name) {
  for (const char* ext : {".json", ".json.gz", ".pftrace", ".perfetto-trace", ".pb"})
    if (name.ends_with(ext)) return true;
  return false;
}

}  // namespace

LoadedTrace loaded_from(trace::EventTable table) {
  LoadedTrace t;
  t.table = std::make_unique<trace::EventTable>(std::move(table));
  t.tree = std::make_unique<ZoneTree>(*t.table);
  t.files = 1;
  return t;
}

Result<LoadedTrace> load_trace(const std::string& path, const trace::ReadLimits& limits) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    RECUR_ASSIGN_OR_RETURN(trace::EventTable t, trace::read_trace(path, limits));
    std::vector<std::string> notes;
    add_notes(path, t.info(), notes);
    LoadedTrace out = loaded_from(std::move(t));
    out.notes = std::move(notes);
    return out;
  }
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    if (entry.is_regular_file() && is_trace_file(entry.path().filename().string())) files.push_back(entry.path().string());
  }
  if (ec) return io_error("{}: cannot list the folder: {}", path, ec.message());
  if (files.empty()) return not_found("{}: no trace files (*.json, *.json.gz, *.pftrace) in this folder", path);
  std::sort(files.begin(), files.end());
  std::vector<trace::EventTable> tables;
  std::vector<std::string> notes;
  for (const std::string& f : files) {
    RECUR_ASSIGN_OR_RETURN(trace::EventTable t, trace::read_trace(f, limits));
    add_notes(f, t.info(), notes);
    tables.push_back(std::move(t));
  }
  LoadedTrace out;
  if (tables.size() == 1) {
    out = loaded_from(std::move(tables.front()));
  } else {
    auto merged = trace::merge_traces(tables);
    if (!merged) return unexpected(merged.error().with_context(path));
    out = loaded_from(std::move(*merged));
    out.files = files.size();
  }
  out.notes = std::move(notes);
  return out;
}

}  // namespace recur::analyze
