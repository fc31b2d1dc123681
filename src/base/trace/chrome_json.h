// Chrome Trace Event JSON: the streaming reader and the writer.
//
// Reader: both the array form and the {"traceEvents": [...]} form, with Kineto's conventions
// (fractional µs timestamps, string pids/tids, args with stream/correlation/External id, s/t/f
// flows with "bp", M events, distributedInfo). Timestamps are parsed from their decimal text,
// so "4458676522690.655" µs becomes exactly 4458676522690655 ns. The input is never turned into
// a DOM: a structural scanner (json_scan.h) cuts the traceEvents array into ~64 KiB batches of
// whole events, and simdjson's On-Demand parser walks one batch at a time, so memory beyond
// the input and the table stays bounded. Errors carry the byte offset and what was expected;
// unbalanced B/E are recovered as documented in docs/trace.md (EventTable::finalize()).
//
// Writer: X/B/E/i/C/M/s/t/f events, ts in µs with the ns fraction, pid/tid (string labels
// restored), args, process/thread names and sort indices as M events, distributedInfo, and
// dropped-event counts (top-level "recurDroppedEvents" plus one "recur_dropped_events" M event
// per thread that dropped events). Thread-safe (no shared state).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "trace/event_table.h"
#include "trace/trace_io.h"

namespace recur::trace {

// Parses uncompressed Chrome JSON. `name` (usually the path) prefixes errors.
Result<EventTable> parse_chrome_json(std::string_view name, const PaddedBytes& json);
// Parses gzip-compressed Chrome JSON, inflating it a window at a time (~256 KiB, more only for
// an event or top-level value larger than that), so peak memory is the compressed input, the
// table and the window. Error offsets count uncompressed bytes (gzip errors: compressed).
Result<EventTable> parse_chrome_json_gzip(std::string_view name, std::span<const uint8_t> gz,
                                          const ReadLimits& limits = {});
// Parses Chrome JSON as it is read from `in` (a file: trace_io.h, read_trace()), through the
// same window: peak memory is the table and the window, whatever the input's size.
Result<EventTable> parse_chrome_json_stream(std::string_view name, ByteStream& in);

Status write_chrome_json(const EventTable& table, OutputFile& out);
std::string chrome_json_string(const EventTable& table);

// Parses a JSON number's text as µs into ns, exactly for up to 3 fraction digits (rounded
// half up beyond). Returns false if the text is not a JSON number.
bool parse_us_to_ns(std::string_view text, int64_t* ns);

}  // namespace recur::trace
