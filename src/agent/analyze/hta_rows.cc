#include "analyze/hta_rows.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

#include "analyze/hta_join.h"

namespace recur::analyze {
namespace {

// HTA reads args.stream with pandas.to_numeric(errors="coerce") and casts to int: numbers and
// numeric strings count (truncated), anything else is -1.
int64_t stream_value(const trace::EventTable& t, const trace::Arg* a) {
  if (a == nullptr) return -1;
  switch (a->type) {
    case trace::ArgType::kInt: return a->i;
    case trace::ArgType::kUint: return int64_t(a->u);
    case trace::ArgType::kBool: return a->b ? 1 : 0;
    case trace::ArgType::kDouble: return std::isfinite(a->d) ? int64_t(a->d) : -1;
    case trace::ArgType::kString: {
      std::string_view s = t.str(a->s);
      double d = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
      return ec == std::errc() && end == s.data() + s.size() && std::isfinite(d) ? int64_t(d) : -1;
    }
    default: return -1;
  }
}

// args.correlation as HTA reads it (an integer id; -1 when absent or not a number).
int64_t correlation_value(const trace::Arg* a) {
  if (a == nullptr) return -1;
  switch (a->type) {
    case trace::ArgType::kInt: return a->i;
    case trace::ArgType::kUint: return int64_t(a->u);
    case trace::ArgType::kDouble: return std::isfinite(a->d) ? int64_t(a->d) : -1;
    default: return -1;
  }
}

// Per distinct name or category: the flags and kernel class HTA derives from its text.
class NameCache {
 public:
  explicit NameCache(const trace::EventTable& t)
      : t_(t), info_(t.strings().size(), kUnknown), cats_(t.strings().size(), kUnknown) {}

  uint8_t name_flags(trace::StringId id, HtaKernelType* type) {
    uint8_t& v = info_[id];
    if (v == kUnknown) {
      std::string_view s = t_.str(id);
      uint8_t flags = 0;
      if (is_hta_profiler_step(s)) flags |= HtaRow::kProfilerStep;
      if (is_hta_launch_stats_call(s)) flags |= HtaRow::kLaunchStatsCall;
      if (is_hta_queue_launch_call(s)) flags |= HtaRow::kQueueLaunchCall;
      if (is_hta_device_sync(s)) flags |= kSyncBit;
      v = uint8_t(flags | (uint8_t(hta_kernel_type(s)) << 6));
    }
    *type = HtaKernelType(v >> 6);
    return uint8_t(v & 0x3f);
  }
  bool kernel_category(trace::StringId id) {
    uint8_t& v = cats_[id];
    if (v == kUnknown) v = is_hta_kernel_category(t_.str(id)) ? 1 : 0;
    return v == 1;
  }

  static constexpr uint8_t kSyncBit = 32;  // only inside the cache (shares kKernelCategory's bit)

 private:
  static constexpr uint8_t kUnknown = 0xff;
  const trace::EventTable& t_;
  std::vector<uint8_t> info_;  // flags in bits 0-5, kernel type in bits 6-7
  std::vector<uint8_t> cats_;
};

// HTA rounds when pandas reads `ts` as float64, i.e. when some timestamp is fractional.
bool has_fractional_us(const trace::EventTable& t) {
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.ts_ns(i) % 1000 != 0) return true;
  }
  return false;
}

// ns as the float64 µs Python's float() reads from the same decimal text: the double nearest to
// ns / 1000. Casting ns (up to 2^62) to double first would round it twice; splitting off the
// whole µs and adding the fraction in 64-bit-mantissa arithmetic rounds once, correctly (the
// error stays below the distance from any double's rounding midpoint for these fractions).
double ns_to_python_us(int64_t ns) {
  static_assert(std::numeric_limits<long double>::digits >= 64, "needs x87-style long double");
  bool negative = ns < 0;
  uint64_t mag = negative ? uint64_t(0) - uint64_t(ns) : uint64_t(ns);
  uint64_t whole = mag / 1000, frac = mag % 1000;
  double us = frac == 0   ? double(whole)
              : whole == 0 ? double(frac) / 1e3
                           : double((long double)(whole) + (long double)(frac) / 1000.0L);
  return negative ? -us : us;
}

// Start rounded up, end (start + dur, added in float64 as HTA does) rounded down, in ns.
void round_like_hta(int64_t ts_ns, int64_t dur_ns, int64_t* ts, int64_t* dur) {
  double ts_us = ns_to_python_us(ts_ns);
  double end_us = ts_us + ns_to_python_us(dur_ns);
  int64_t start = int64_t(std::ceil(ts_us));
  int64_t end = int64_t(std::floor(end_us));
  *ts = start * 1000;
  *dur = (end - start) * 1000;
}

// Pairs CPU and GPU rows that share a correlation id; when several match, the last one wins
// (HTA assigns the merged pairs in order, so later ones overwrite earlier ones).
void link_correlated(std::vector<HtaRow>& rows) {
  HtaJoin by_id(rows, [](const HtaRow& r) { return r.correlation != -1; });
  const auto& e = by_id.entries();
  for (size_t lo = 0, hi; lo < e.size(); lo = hi) {
    int32_t last_cpu = -1, last_gpu = -1;
    for (hi = lo; hi < e.size() && e[hi].first == e[lo].first; ++hi) {
      (rows[e[hi].second].has(HtaRow::kGpu) ? last_gpu : last_cpu) = int32_t(e[hi].second);
    }
    for (size_t k = lo; k < hi; ++k) {
      HtaRow& r = rows[e[k].second];
      int32_t other = r.has(HtaRow::kGpu) ? last_cpu : last_gpu;
      if (other < 0) continue;
      r.flags |= HtaRow::kLinked;
      if (r.has(HtaRow::kGpu)) r.partner = other;
    }
  }
}

}  // namespace

HtaRows hta_rows(const trace::EventTable& t) {
  HtaRows out;
  out.rounded = has_fractional_us(t);
  NameCache names(t);
  std::optional<trace::StringId> trace_cat = t.strings().find("Trace");
  std::optional<trace::StringId> stream_key = t.strings().find("stream");
  std::optional<trace::StringId> correlation_key = t.strings().find("correlation");
  std::vector<trace::StringId> step_names;
  out.rows.reserve(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.phase(i) != 'X' || t.cat_id(i) == 0 || (trace_cat && t.cat_id(i) == *trace_cat)) continue;
    HtaRow r;
    if (out.rounded) {
      round_like_hta(t.ts_ns(i), t.dur_ns(i), &r.ts, &r.dur);
    } else {
      r.ts = t.ts_ns(i);
      r.dur = t.dur_ns(i);
    }
    const trace::Arg *stream = nullptr, *correlation = nullptr;
    for (size_t k = t.args_begin(i), end = t.args_end(i); k < end; ++k) {
      const trace::Arg& a = t.arg(k);
      if (stream_key && a.key == *stream_key) stream = &a;
      if (correlation_key && a.key == *correlation_key) correlation = &a;
    }
    r.stream = stream_value(t, stream);
    r.correlation = correlation_value(correlation);
    uint8_t flags = names.name_flags(t.name_id(i), &r.kernel_type);
    bool sync = (flags & NameCache::kSyncBit) != 0;
    r.flags = uint8_t(flags & ~NameCache::kSyncBit);
    if (names.kernel_category(t.cat_id(i))) r.flags |= HtaRow::kKernelCategory;
    if ((r.stream >= 0 && r.correlation >= 0) || sync) r.flags |= HtaRow::kGpu;
    if (r.has(HtaRow::kProfilerStep)) step_names.push_back(t.name_id(i));
    out.rows.push_back(r);
  }
  std::sort(step_names.begin(), step_names.end());
  step_names.erase(std::unique(step_names.begin(), step_names.end()), step_names.end());
  for (trace::StringId id : step_names) out.profiler_steps.emplace_back(t.str(id));
  link_correlated(out.rows);
  return out;
}

}  // namespace recur::analyze
