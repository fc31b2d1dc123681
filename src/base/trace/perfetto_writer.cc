// Perfetto protobuf writer (perfetto.h).
#include <algorithm>
#include <map>
#include <queue>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "trace/perfetto.h"
#include "trace/perfetto_trace.pb.h"

namespace recur::trace {
namespace {

namespace pb = recur::perfetto;

constexpr uint32_t kSequenceId = 1;
constexpr uint64_t kThreadUuidBase = uint64_t(1) << 32;
constexpr uint64_t kCounterUuidBase = uint64_t(2) << 32;
constexpr uint64_t kLaneUuidBase = uint64_t(3) << 32;

class Writer {
 public:
  Writer(const EventTable& t, OutputFile* out, std::string* mem) : t_(t), out_(out), mem_(mem) {}

  Status run() {
    emitted_names_.assign(t_.strings().size(), 0);
    for (size_t p = 0; p < t_.processes().size(); ++p) {
      const Process& proc = t_.processes()[p];
      process_uuid_[proc.pid] = p + 1;
      if (proc.pid < INT32_MIN || proc.pid > INT32_MAX) {
        return unsupported("pid {} does not fit Perfetto's int32 pid", proc.pid);
      }
      pb::TracePacket pkt = packet();
      auto* td = pkt.mutable_track_descriptor();
      td->set_uuid(p + 1);
      auto* pd = td->mutable_process();
      pd->set_pid(int32_t(proc.pid));
      StringId name = proc.name != 0 ? proc.name : proc.label;
      if (name != 0) pd->set_process_name(std::string(t_.str(name)));
      if (proc.sort_index) pd->set_legacy_sort_index(int32_t(*proc.sort_index));
      RECUR_RETURN_IF_ERROR(emit(pkt));
    }
    for (size_t i = 0; i < t_.tracks().size(); ++i) {
      const Track& tr = t_.tracks()[i];
      if (tr.tid < INT32_MIN || tr.tid > INT32_MAX) {
        return unsupported("tid {} does not fit Perfetto's int32 tid", tr.tid);
      }
      pb::TracePacket pkt = packet();
      auto* td = pkt.mutable_track_descriptor();
      td->set_uuid(kThreadUuidBase + i);
      td->set_parent_uuid(process_uuid_[tr.pid]);
      auto* th = td->mutable_thread();
      th->set_pid(int32_t(tr.pid));
      th->set_tid(int32_t(tr.tid));
      StringId name = tr.thread_name != 0 ? tr.thread_name : tr.tid_label;
      if (name != 0) th->set_thread_name(std::string(t_.str(name)));
      if (tr.thread_sort_index) th->set_legacy_sort_index(int32_t(*tr.thread_sort_index));
      RECUR_RETURN_IF_ERROR(emit(pkt));
    }
    // Time order; at equal ts, longer slices first so that they enclose the shorter ones.
    std::vector<uint32_t> order(t_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = uint32_t(i);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      if (t_.ts_ns(a) != t_.ts_ns(b)) return t_.ts_ns(a) < t_.ts_ns(b);
      return (t_.phase(a) == 'X' ? t_.dur_ns(a) : -1) > (t_.phase(b) == 'X' ? t_.dur_ns(b) : -1);
    });
    int64_t last_ts = 0;
    for (uint32_t i : order) {
      int64_t ts = t_.ts_ns(i);
      if (ts < 0) return unsupported("event {} has a negative timestamp ({} ns), which Perfetto cannot hold", i, ts);
      RECUR_RETURN_IF_ERROR(flush_ends(ts));
      last_ts = std::max(last_ts, ts);
      char ph = t_.phase(i);
      uint64_t track_uuid = kThreadUuidBase + t_.track(i);
      switch (ph) {
        case 'X': {
          int64_t end = ts + t_.dur_ns(i);
          RECUR_ASSIGN_OR_RETURN(uint64_t lane, lane_for(t_.track(i), ts, end));
          RECUR_RETURN_IF_ERROR(slice_or_instant(i, pb::TrackEvent::TYPE_SLICE_BEGIN, lane));
          ends_.push(End{end, -int64_t(++begun_), lane});
          last_ts = std::max(last_ts, end);
          break;
        }
        case 'i':
        case 'I':
        case 's':
        case 't':
        case 'f':
          RECUR_RETURN_IF_ERROR(slice_or_instant(i, pb::TrackEvent::TYPE_INSTANT, track_uuid));
          break;
        case 'C':
          RECUR_RETURN_IF_ERROR(counter(i));
          break;
        default:
          break;  // other metadata and async phases are not written (perfetto.h)
      }
    }
    RECUR_RETURN_IF_ERROR(flush_ends(INT64_MAX));
    for (size_t i = 0; i < t_.tracks().size(); ++i) {
      const Track& tr = t_.tracks()[i];
      if (tr.dropped_events == 0) continue;
      pb::TracePacket pkt = packet();
      pkt.set_timestamp(uint64_t(last_ts));
      auto* te = pkt.mutable_track_event();
      te->set_type(pb::TrackEvent::TYPE_INSTANT);
      te->set_track_uuid(kThreadUuidBase + i);
      te->set_name("recur_dropped_events");
      auto* a = te->add_debug_annotations();
      a->set_name("count");
      a->set_uint_value(tr.dropped_events);
      RECUR_RETURN_IF_ERROR(emit(pkt));
    }
    return flush();
  }

 private:
  struct Lane {
    uint64_t uuid = 0;
    std::vector<int64_t> open_ends;  // ends of the slices open on this lane, innermost last
  };

  struct End {
    int64_t ts;
    int64_t neg_index;  // later-begun slices end first at equal ts
    uint64_t track;
    bool operator>(const End& o) const { return std::tie(ts, neg_index) > std::tie(o.ts, o.neg_index); }
  };

  // The track for a slice [ts, end] of table track `track`: the thread's own track if the
  // slice nests there, else the first child track ("lane") where it does. Perfetto slices on
  // one track must nest; Kineto's GPU streams sometimes overlap (a memcpy and a sync).
  Result<uint64_t> lane_for(uint32_t track, int64_t ts, int64_t end) {
    std::vector<Lane>& lanes = lanes_[track];
    for (size_t k = 0;; ++k) {
      if (k == lanes.size()) {
        Lane lane;
        lane.uuid = kThreadUuidBase + track;
        if (k > 0) {
          lane.uuid = kLaneUuidBase + next_lane_++;
          const Track& tr = t_.tracks()[track];
          pb::TracePacket d = packet();
          auto* td = d.mutable_track_descriptor();
          td->set_uuid(lane.uuid);
          td->set_parent_uuid(kThreadUuidBase + track);
          std::string_view base = t_.str(tr.thread_name != 0 ? tr.thread_name : tr.tid_label);
          td->set_name(base.empty() ? fmt::format("{} (overlap {})", tr.tid, k)
                                    : fmt::format("{} (overlap {})", base, k));
          RECUR_RETURN_IF_ERROR(emit(d));
        }
        lanes.push_back(std::move(lane));
      }
      Lane& lane = lanes[k];
      while (!lane.open_ends.empty() && lane.open_ends.back() <= ts) lane.open_ends.pop_back();
      if (lane.open_ends.empty() || lane.open_ends.back() >= end) {
        lane.open_ends.push_back(end);
        return lane.uuid;
      }
    }
  }

  pb::TracePacket packet() {
    pb::TracePacket pkt;
    pkt.set_trusted_packet_sequence_id(kSequenceId);
    if (first_) {
      pkt.set_sequence_flags(pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
      first_ = false;
    } else {
      pkt.set_sequence_flags(pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
    }
    return pkt;
  }

  Status flush_ends(int64_t upto) {
    while (!ends_.empty() && ends_.top().ts <= upto) {
      End e = ends_.top();
      ends_.pop();
      pb::TracePacket pkt = packet();
      pkt.set_timestamp(uint64_t(e.ts));
      auto* te = pkt.mutable_track_event();
      te->set_type(pb::TrackEvent::TYPE_SLICE_END);
      te->set_track_uuid(e.track);
      RECUR_RETURN_IF_ERROR(emit(pkt));
    }
    return ok_status();
  }

  // Interned ids are the table's StringId + 1 (0 is invalid in Perfetto).
  uint64_t intern(pb::TracePacket& pkt, StringId id, uint8_t kind) {
    if (!(emitted_names_[id] & kind)) {
      emitted_names_[id] |= kind;
      auto* idata = pkt.mutable_interned_data();
      std::string s(t_.str(id));
      if (kind == 1) {
        auto* e = idata->add_event_names();
        e->set_iid(id + 1);
        e->set_name(s);
      } else if (kind == 2) {
        auto* e = idata->add_event_categories();
        e->set_iid(id + 1);
        e->set_name(s);
      } else {
        auto* e = idata->add_debug_annotation_names();
        e->set_iid(id + 1);
        e->set_name(s);
      }
    }
    return uint64_t(id) + 1;
  }

  void annotations(pb::TracePacket& pkt, pb::TrackEvent* te, size_t i) {
    for (size_t k = t_.args_begin(i), e = t_.args_end(i); k < e; ++k) {
      const Arg& a = t_.arg(k);
      auto* d = te->add_debug_annotations();
      d->set_name_iid(intern(pkt, a.key, 4));
      switch (a.type) {
        case ArgType::kNull: d->set_legacy_json_value("null"); break;
        case ArgType::kBool: d->set_bool_value(a.b); break;
        case ArgType::kInt: d->set_int_value(a.i); break;
        case ArgType::kUint: d->set_uint_value(a.u); break;
        case ArgType::kDouble: d->set_double_value(a.d); break;
        case ArgType::kString: d->set_string_value(std::string(t_.str(a.s))); break;
        case ArgType::kJson: d->set_legacy_json_value(std::string(t_.str(a.s))); break;
      }
    }
  }

  Status slice_or_instant(size_t i, pb::TrackEvent::Type type, uint64_t track_uuid) {
    pb::TracePacket pkt = packet();
    pkt.set_timestamp(uint64_t(t_.ts_ns(i)));
    auto* te = pkt.mutable_track_event();
    te->set_type(type);
    te->set_track_uuid(track_uuid);
    te->set_name_iid(intern(pkt, t_.name_id(i), 1));
    if (t_.cat_id(i) != 0) te->add_category_iids(intern(pkt, t_.cat_id(i), 2));
    char ph = t_.phase(i);
    if (ph == 's' || ph == 't') te->add_flow_ids(t_.id(i));
    if (ph == 'f') te->add_terminating_flow_ids(t_.id(i));
    annotations(pkt, te, i);
    return emit(pkt);
  }

  Status counter(size_t i) {
    for (size_t k = t_.args_begin(i), e = t_.args_end(i); k < e; ++k) {
      const Arg& a = t_.arg(k);
      if (a.type != ArgType::kInt && a.type != ArgType::kUint && a.type != ArgType::kDouble) continue;
      auto key = std::make_tuple(int64_t(t_.track(i)), t_.name_id(i), a.key);
      auto it = counter_uuid_.find(key);
      if (it == counter_uuid_.end()) {
        uint64_t uuid = kCounterUuidBase + counter_uuid_.size();
        it = counter_uuid_.emplace(key, uuid).first;
        pb::TracePacket d = packet();
        auto* td = d.mutable_track_descriptor();
        td->set_uuid(uuid);
        td->set_parent_uuid(kThreadUuidBase + t_.track(i));  // a thread-scoped counter
        std::string name(t_.name(i));
        if (t_.str(a.key) != "value") {
          name.push_back('.');
          name.append(t_.str(a.key));
        }
        td->set_name(name);
        auto* cd = td->mutable_counter();
        if (t_.cat_id(i) != 0) cd->add_categories(std::string(t_.cat(i)));
        RECUR_RETURN_IF_ERROR(emit(d));
      }
      pb::TracePacket pkt = packet();
      pkt.set_timestamp(uint64_t(t_.ts_ns(i)));
      auto* te = pkt.mutable_track_event();
      te->set_type(pb::TrackEvent::TYPE_COUNTER);
      te->set_track_uuid(it->second);
      if (a.type == ArgType::kDouble) {
        te->set_double_counter_value(a.d);
      } else {
        te->set_counter_value(a.type == ArgType::kInt ? a.i : int64_t(a.u));
      }
      RECUR_RETURN_IF_ERROR(emit(pkt));
    }
    return ok_status();
  }

  // Appends the packet as Trace.packet (field 1, length-delimited).
  Status emit(const pb::TracePacket& pkt) {
    size_t n = pkt.ByteSizeLong();
    uint8_t head[16];
    size_t h = 0;
    head[h++] = 0x0a;
    uint64_t v = n;
    while (v >= 0x80) {
      head[h++] = uint8_t(v | 0x80);
      v >>= 7;
    }
    head[h++] = uint8_t(v);
    buf_.append(reinterpret_cast<const char*>(head), h);
    size_t at = buf_.size();
    buf_.resize(at + n);
    if (!pkt.SerializeToArray(buf_.data() + at, int(n))) return internal_error("TracePacket serialization failed");
    if (buf_.size() >= (256u << 10)) return flush();
    return ok_status();
  }

  Status flush() {
    if (out_ != nullptr) {
      RECUR_RETURN_IF_ERROR(out_->write(buf_));
    } else {
      mem_->append(buf_);
    }
    buf_.clear();
    return ok_status();
  }

  const EventTable& t_;
  OutputFile* out_;
  std::string* mem_;
  std::string buf_;
  bool first_ = true;
  int64_t begun_ = 0;
  uint64_t next_lane_ = 0;
  std::unordered_map<uint32_t, std::vector<Lane>> lanes_;
  std::vector<uint8_t> emitted_names_;
  std::map<int64_t, uint64_t> process_uuid_;
  std::map<std::tuple<int64_t, StringId, StringId>, uint64_t> counter_uuid_;
  std::priority_queue<End, std::vector<End>, std::greater<End>> ends_;
};

}  // namespace

Status write_perfetto(const EventTable& table, OutputFile& out) {
  Writer w(table, &out, nullptr);
  return w.run();
}

Result<std::string> perfetto_bytes(const EventTable& table) {
  std::string s;
  Writer w(table, nullptr, &s);
  RECUR_RETURN_IF_ERROR(w.run());
  return s;
}

}  // namespace recur::trace
