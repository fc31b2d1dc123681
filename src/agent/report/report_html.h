// Small pieces of HTML for the run report (report.h): escaping, hrefs and number text.
// Everything the report takes from the journal (hypotheses, notes, knob values, paths) goes
// through html_escape, so text like `<script>` or `a & b` is shown, never interpreted.
// Plain functions of their arguments; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace recur::agent {

// Escapes & < > " ' (safe in text and in double- or single-quoted attributes).
std::string html_escape(std::string_view text);

// A relative or absolute file path as a URL path: every byte outside [A-Za-z0-9/._~-] is
// percent-encoded, so '#', '?', '%' and spaces in file names do not end or change the link.
// The result still needs html_escape only for '&', which it never contains.
std::string url_path(std::string_view path);

// A number for people: up to 4 significant digits ("41.2", "0.0031", "1.23e+06").
std::string number_text(double v);

// Seconds as "0.8 s", "12.4 s", "3 min 05 s", "2 h 04 min".
std::string duration_text(double seconds);

// Unix seconds as "2024-05-01 13:04:05 UTC".
std::string utc_time_text(double unix_s);

}  // namespace recur::agent
