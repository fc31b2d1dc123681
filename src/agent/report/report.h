// The run report: one self-contained HTML page per agent run, written from the journal alone
// (docs/agent.md, "Report"). It works offline and without JavaScript: inline CSS, inline SVG
// charts, <details> for each experiment, relative links to the trace artifacts.
//
//   auto j = Journal::open("runs/journal.db", {.create = false});
//   auto r = write_run_report(**j, "kda-1");   // -> runs/kda-1/report.html
//
// Sections (each an element with this id, counted by the tests):
//   #summary    run name, episode, state and outcome, elapsed, total probe cost, counts
//   #timeline   one bar per experiment over wall time, coloured by decision (report_charts.h)
//   #metrics    each gate metric over the gate evaluations, with ci95 error bars and threshold
//   #decisions  a <details class="experiment" id="step-N"> per experiment with its Feedback
//   #config     base vs final configuration, knob by knob, and the step that set each change
//   #artifacts  links to every artifact (traces, reports), relative to the report's folder
// Every string from the journal is HTML-escaped. Reads only; safe while the agent writes.
#pragma once

#include <string>
#include <string_view>

#include "journal/journal.h"
#include "report/report_data.h"

namespace recur::agent {

struct ReportOptions {
  std::string out;  // the HTML file; empty: default_report_path(journal path, run name)
};

struct ReportResult {
  std::string path;  // the file written
  RunRecord run;
  ReportCounts counts;
  size_t bytes = 0;
};

// `<journal's folder>/<run name>/report.html`, the run name made safe as a file name (bytes
// other than letters, digits, '.', '_' and '-' become '_'; "." and ".." too).
std::string default_report_path(std::string_view journal_path, std::string_view run_name);

// The page for one run (pure; report_data.h gathers what it shows).
std::string render_report_html(const ReportData& d);

// Reads RUN (name or id) from the journal, renders it, and writes the file (through a temporary
// file and a rename, so a browser never sees half a page). Creates the output folder.
Result<ReportResult> write_run_report(const Journal& journal, std::string_view run, const ReportOptions& options = {});

}  // namespace recur::agent
