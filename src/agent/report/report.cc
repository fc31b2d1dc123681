#include "report/report.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace recur::agent {
namespace {

namespace fs = std::filesystem;

std::string file_safe(std::string_view name) {
  std::string out;
  for (char c : name) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-';
    out += ok ? c : '_';
  }
  if (out.empty() || out == "." || out == "..") out = std::string(out.size() + 1, '_');
  return out;
}

// Writes through `path.tmp` and a rename: a reader sees the old page or the new one, never half.
Status write_file_atomically(const fs::path& path, const std::string& text) {
  std::error_code ec;
  if (path.has_parent_path()) {
    fs::create_directories(path.parent_path(), ec);
    if (ec) return io_error("report {}: create folder {}: {}", path.string(), path.parent_path().string(), ec.message());
  }
  fs::path tmp = path;
  tmp += ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return io_error("report {}: open {} for writing: {}", path.string(), tmp.string(), std::strerror(errno));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    fs::remove(tmp, ec);
    return io_error("report {}: write {}: {}", path.string(), tmp.string(), std::strerror(errno));
  }
  fs::rename(tmp, path, ec);
  if (ec) return io_error("report {}: rename {} into place: {}", path.string(), tmp.string(), ec.message());
  return ok_status();
}

}  // namespace

std::string default_report_path(std::string_view journal_path, std::string_view run_name) {
  fs::path dir = fs::path(journal_path).parent_path();
  return (dir / file_safe(run_name) / "report.html").string();
}

Result<ReportResult> write_run_report(const Journal& journal, std::string_view run, const ReportOptions& options) {
  RECUR_ASSIGN_OR_RETURN(RunRecord r, journal.find_run(run));
  std::string path = options.out.empty() ? default_report_path(journal.path(), r.name) : options.out;
  fs::path dir = fs::path(path).parent_path();
  RECUR_ASSIGN_OR_RETURN(ReportData data, load_report_data(journal, std::to_string(r.id), dir.string()));
  std::string html = render_report_html(data);
  RECUR_RETURN_IF_ERROR(write_file_atomically(path, html));
  return ReportResult{.path = path, .run = std::move(data.run), .counts = data.counts, .bytes = html.size()};
}

}  // namespace recur::agent
