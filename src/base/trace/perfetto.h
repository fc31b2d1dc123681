// Perfetto protobuf traces (perfetto_trace.proto): writer and reader.
//
// Writer: one packet sequence; a TrackDescriptor per process (ProcessDescriptor: pid, name,
// sort index), per thread track (ThreadDescriptor: pid, tid, name, sort index) and per counter
// series; then TrackEvents in time order with ns timestamps and interned event names,
// categories and debug-annotation names (InternedData on first use). X events become
// SLICE_BEGIN/SLICE_END pairs, 'i' an INSTANT, 'C' a COUNTER on its counter track, and flow
// points s/t/f an INSTANT carrying flow_ids (s, t) or terminating_flow_ids (f). Args become
// debug annotations (arrays and objects as legacy_json_value). A thread's dropped-event count
// is an INSTANT named "recur_dropped_events" with a "count" annotation. Not written: other
// metadata rows, async phases, instant scopes and distributedInfo (docs/trace.md).
//
// Reader: the same subset, streaming one TracePacket at a time; BEGIN/END are paired by
// EventTable::finalize() with the same recovery rules as Chrome B/E. Errors give the byte
// offset of the offending packet and what was expected. Thread-safe (no shared state).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "trace/event_table.h"
#include "trace/trace_io.h"

namespace recur::trace {

Result<EventTable> parse_perfetto(std::string_view name, std::span<const uint8_t> bytes);

Status write_perfetto(const EventTable& table, OutputFile& out);
Result<std::string> perfetto_bytes(const EventTable& table);

}  // namespace recur::trace
