// Perfetto protobuf reader (perfetto.h): walks Trace.packet fields one at a time, so only one
// TracePacket is decoded at once.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <simdjson.h>

#include "trace/perfetto.h"
#include "trace/perfetto_trace.pb.h"

namespace recur::trace {
namespace {

namespace pb = recur::perfetto;

// Reads a base-128 varint at bytes[*pos]; false if truncated or longer than 10 bytes.
bool read_varint(std::span<const uint8_t> bytes, size_t* pos, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && *pos < bytes.size(); shift += 7) {
    uint8_t b = bytes[(*pos)++];
    v |= uint64_t(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *out = v;
      return true;
    }
  }
  return false;
}

struct TrackInfo {
  enum Kind { kProcess, kThread, kCounter, kOther } kind = kOther;
  int64_t pid = 0, tid = 0;
  bool has_tid = false;  // thread tracks, and counters whose parent is a thread track
  uint64_t parent = 0;
  std::string name;
  std::string category;
};

class Reader {
 public:
  Reader(std::string_view name, std::span<const uint8_t> bytes) : name_(name), bytes_(bytes) {}

  Result<EventTable> run() {
    // Pass 1: track descriptors (events may precede the descriptor of their track).
    RECUR_RETURN_IF_ERROR(for_each_packet([&](const pb::TracePacket& p, size_t) {
      if (p.has_track_descriptor()) descriptor(p.track_descriptor());
      return ok_status();
    }));
    resolve_tracks();
    // Pass 2: events, with per-sequence interning.
    RECUR_RETURN_IF_ERROR(for_each_packet([&](const pb::TracePacket& p, size_t off) {
      return packet(p, off);
    }));
    for (auto& [uuid, o] : open_) {
      for (size_t b : o.stack) {
        table_.complete_event(b, o.last_ts - table_.ts_ns(b));
        ++table_.info().unclosed_begin_events;
      }
    }
    table_.finalize();
    return std::move(table_);
  }

 private:
  template <typename Fn>
  Status for_each_packet(Fn&& fn) {
    size_t pos = 0;
    pb::TracePacket pkt;
    while (pos < bytes_.size()) {
      size_t at = pos;
      uint64_t tag;
      if (!read_varint(bytes_, &pos, &tag)) {
        return parse_error("{}: byte {}: truncated field tag: expected a TracePacket (field 1)", name_, at);
      }
      uint64_t field = tag >> 3, wire = tag & 7;
      if (wire != 2) {
        return parse_error("{}: byte {}: expected a length-delimited field (Trace.packet = 1), got field {} wire type {}", name_, at, field, wire);
      }
      uint64_t len;
      if (!read_varint(bytes_, &pos, &len)) {
        return parse_error("{}: byte {}: truncated length of field {}", name_, at, field);
      }
      if (len > bytes_.size() - pos) {
        return parse_error("{}: byte {}: truncated input: field {} declares {} bytes but only {} remain", name_, at, field, len, bytes_.size() - pos);
      }
      if (field == 1) {
        if (!pkt.ParseFromArray(bytes_.data() + pos, int(len))) {
          return parse_error("{}: byte {}: expected a valid TracePacket ({} bytes)", name_, at, len);
        }
        RECUR_RETURN_IF_ERROR(fn(pkt, at));
      }
      pos += size_t(len);
    }
    return ok_status();
  }

  void descriptor(const pb::TrackDescriptor& d) {
    TrackInfo& t = tracks_[d.uuid()];
    t.parent = d.parent_uuid();
    t.name = d.name();
    if (d.has_thread()) {
      t.kind = TrackInfo::kThread;
      t.has_tid = true;
      t.pid = d.thread().pid();
      t.tid = d.thread().tid();
      uint32_t tr = table_.track_for(t.pid, t.tid);
      Track& track = table_.tracks()[tr];
      if (d.thread().has_thread_name()) {
        StringId name = table_.strings().intern(d.thread().thread_name());
        (t.tid >= kSyntheticIdBase ? track.tid_label : track.thread_name) = name;
      }
      if (d.thread().has_legacy_sort_index()) track.thread_sort_index = d.thread().legacy_sort_index();
    } else if (d.has_process()) {
      t.kind = TrackInfo::kProcess;
      t.pid = d.process().pid();
      Process& p = table_.process(t.pid);
      if (d.process().has_process_name()) {
        StringId name = table_.strings().intern(d.process().process_name());
        (t.pid >= kSyntheticIdBase ? p.label : p.name) = name;
      }
      if (d.process().has_legacy_sort_index()) p.sort_index = d.process().legacy_sort_index();
    } else if (d.has_counter()) {
      t.kind = TrackInfo::kCounter;
      if (d.counter().categories_size() > 0) t.category = d.counter().categories(0);
    }
  }

  // Counter and other tracks take the pid (and, under a thread track, the tid) of their
  // parent; tracks without a thread become a track of their process with tid = 0.
  void resolve_tracks() {
    for (auto& [uuid, t] : tracks_) {
      if (t.kind == TrackInfo::kThread || t.kind == TrackInfo::kProcess) continue;
      auto it = tracks_.find(t.parent);
      if (it == tracks_.end()) continue;
      t.pid = it->second.pid;
      if (it->second.kind == TrackInfo::kThread) {
        t.tid = it->second.tid;
        t.has_tid = true;
      }
    }
  }

  uint32_t table_track(uint64_t uuid) {
    auto it = tracks_.find(uuid);
    if (it == tracks_.end()) return table_.track_for(0, 0);
    const TrackInfo& t = it->second;
    return table_.track_for(t.pid, t.has_tid ? t.tid : 0);
  }

  struct OpenSlices {
    std::vector<size_t> stack;
    int64_t last_ts = 0;
  };

  struct Interning {
    std::unordered_map<uint64_t, StringId> names, cats, ann;
  };

  Status packet(const pb::TracePacket& p, size_t off) {
    uint32_t seq = p.trusted_packet_sequence_id();
    Interning& in = interning_[seq];
    if (p.sequence_flags() & pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED) in = Interning();
    if (p.has_interned_data()) {
      for (const auto& e : p.interned_data().event_names()) in.names[e.iid()] = intern(e.name());
      for (const auto& e : p.interned_data().event_categories()) in.cats[e.iid()] = intern(e.name());
      for (const auto& e : p.interned_data().debug_annotation_names()) in.ann[e.iid()] = intern(e.name());
    }
    if (!p.has_track_event()) return ok_status();
    const pb::TrackEvent& te = p.track_event();
    if (p.timestamp() >= (uint64_t(1) << 62)) {
      return parse_error("{}: byte {}: expected a timestamp below 2^62 ns, got {}", name_, off, p.timestamp());
    }
    int64_t ts = int64_t(p.timestamp());
    StringId name = 0;
    if (te.has_name_iid()) {
      auto it = in.names.find(te.name_iid());
      if (it == in.names.end()) {
        return parse_error("{}: byte {}: expected interned event name {} to be defined earlier on sequence {}", name_, off, te.name_iid(), seq);
      }
      name = it->second;
    } else if (te.has_name()) {
      name = intern(te.name());
    }
    std::string cat;
    for (uint64_t iid : te.category_iids()) {
      auto it = in.cats.find(iid);
      if (it == in.cats.end()) {
        return parse_error("{}: byte {}: expected interned category {} to be defined earlier on sequence {}", name_, off, iid, seq);
      }
      if (!cat.empty()) cat += ',';
      cat += table_.str(it->second);
    }
    for (const std::string& c : te.categories()) {
      if (!cat.empty()) cat += ',';
      cat += c;
    }
    uint32_t tr = table_track(te.track_uuid());
    switch (te.type()) {
      case pb::TrackEvent::TYPE_SLICE_BEGIN: {
        // Paired per Perfetto track (not per pid/tid: overlapping slices of one thread sit on
        // child tracks), LIFO, with finalize()'s recovery rules for unbalanced ones.
        OpenSlices& o = open_[te.track_uuid()];
        o.stack.push_back(table_.add_event('B', name, intern(cat), ts, 0, tr));
        o.last_ts = std::max(o.last_ts, ts);
        return annotations(te, in, off);
      }
      case pb::TrackEvent::TYPE_SLICE_END: {
        OpenSlices& o = open_[te.track_uuid()];
        o.last_ts = std::max(o.last_ts, ts);
        if (o.stack.empty()) {
          ++table_.info().unmatched_end_events;
          return ok_status();
        }
        size_t b = o.stack.back();
        if (ts < table_.ts_ns(b)) {
          return parse_error("{}: byte {}: expected SLICE_END at or after its SLICE_BEGIN ({} ns), got {} ns", name_, off, table_.ts_ns(b), ts);
        }
        o.stack.pop_back();
        table_.complete_event(b, ts - table_.ts_ns(b));
        return ok_status();
      }
      case pb::TrackEvent::TYPE_INSTANT: {
        if (table_.str(name) == "recur_dropped_events") {
          for (const auto& a : te.debug_annotations()) {
            if (a.has_uint_value()) table_.tracks()[tr].dropped_events = a.uint_value();
            if (a.has_int_value() && a.int_value() >= 0) table_.tracks()[tr].dropped_events = uint64_t(a.int_value());
          }
          return ok_status();
        }
        if (te.terminating_flow_ids_size() > 0) {
          for (uint64_t id : te.terminating_flow_ids()) {
            table_.add_event('f', name, intern(cat), ts, 0, tr, id, kFlagHasId | kFlagBindEnclosing);
            RECUR_RETURN_IF_ERROR(annotations(te, in, off));
          }
        } else if (te.flow_ids_size() > 0) {
          for (uint64_t id : te.flow_ids()) {
            char ph = flows_seen_.insert(id).second ? 's' : 't';
            table_.add_event(ph, name, intern(cat), ts, 0, tr, id, kFlagHasId);
            RECUR_RETURN_IF_ERROR(annotations(te, in, off));
          }
        } else {
          table_.add_event('i', name, intern(cat), ts, 0, tr);
          return annotations(te, in, off);
        }
        return ok_status();
      }
      case pb::TrackEvent::TYPE_COUNTER: {
        auto it = tracks_.find(te.track_uuid());
        std::string_view cname = it != tracks_.end() ? std::string_view(it->second.name) : std::string_view();
        std::string_view ccat = it != tracks_.end() ? std::string_view(it->second.category) : std::string_view();
        if (name == 0) name = intern(cname);
        table_.add_event('C', name, intern(cat.empty() ? ccat : std::string_view(cat)), ts, 0, tr);
        StringId key = intern("value");
        if (te.has_double_counter_value()) {
          table_.add_arg_double(key, te.double_counter_value());
        } else {
          table_.add_arg_int(key, te.counter_value());
        }
        return ok_status();
      }
      default:
        return ok_status();  // TYPE_UNSPECIFIED (legacy events) are not read
    }
  }

  Status annotations(const pb::TrackEvent& te, const Interning& in, size_t off) {
    for (const auto& a : te.debug_annotations()) {
      StringId key = 0;
      if (a.has_name_iid()) {
        auto it = in.ann.find(a.name_iid());
        if (it == in.ann.end()) {
          return parse_error("{}: byte {}: expected interned annotation name {} to be defined earlier", name_, off, a.name_iid());
        }
        key = it->second;
      } else {
        key = intern(a.name());
      }
      switch (a.value_case()) {
        case pb::DebugAnnotation::kBoolValue: table_.add_arg_bool(key, a.bool_value()); break;
        case pb::DebugAnnotation::kUintValue: table_.add_arg_uint(key, a.uint_value()); break;
        case pb::DebugAnnotation::kIntValue: table_.add_arg_int(key, a.int_value()); break;
        case pb::DebugAnnotation::kDoubleValue: table_.add_arg_double(key, a.double_value()); break;
        case pb::DebugAnnotation::kStringValue: table_.add_arg_string(key, a.string_value()); break;
        case pb::DebugAnnotation::kLegacyJsonValue:
          if (a.legacy_json_value() == "null") {
            table_.add_arg_null(key);
          } else if (valid_json(a.legacy_json_value())) {
            table_.add_arg_json(key, a.legacy_json_value());
          } else {
            table_.add_arg_string(key, a.legacy_json_value());  // not JSON: kept as text
          }
          break;
        default: table_.add_arg_null(key); break;
      }
    }
    return ok_status();
  }

  StringId intern(std::string_view s) { return table_.strings().intern(s); }

  // Whether a legacy_json_value really is JSON (an array or object), so that writing it back
  // raw into Chrome JSON stays valid.
  bool valid_json(const std::string& text) {
    if (text.empty() || (text[0] != '[' && text[0] != '{')) return false;
    simdjson::padded_string padded(text);
    simdjson::dom::element e;
    return !json_parser_.parse(padded).get(e);
  }

  std::string name_;
  simdjson::dom::parser json_parser_;
  std::span<const uint8_t> bytes_;
  EventTable table_;
  std::unordered_map<uint64_t, TrackInfo> tracks_;
  std::unordered_map<uint32_t, Interning> interning_;
  std::unordered_set<uint64_t> flows_seen_;
  std::unordered_map<uint64_t, OpenSlices> open_;
};

}  // namespace

Result<EventTable> parse_perfetto(std::string_view name, std::span<const uint8_t> bytes) {
  Reader r(name, bytes);
  return r.run();
}

}  // namespace recur::trace
