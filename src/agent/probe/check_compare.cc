#include "probe/check_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "probe/check_numeric.h"
#include "probe/kernel_harness.h"

namespace recur::probe {

Comparison compare_output(const CompareInput& in) {
  const kernels::TensorSpec& spec = *in.spec;
  const TensorView& got = *in.got;
  const std::vector<int64_t> dims(got.shape().begin(), got.shape().end());
  const int pd = in.shards > 1 ? spec.partition_dim : -1;
  const int64_t extent = pd >= 0 ? dims[size_t(pd)] : 1;

  Comparison c;
  c.shards = in.shards;
  const int nshards = pd >= 0 ? in.shards : 1;
  for (int p = 0; p < nshards; ++p) {
    auto [b, e] = pd >= 0 ? kernels::shard_range(extent, in.shards, p) : std::pair<int64_t, int64_t>{0, dims.empty() ? 1 : dims[0]};
    c.shard_table.push_back(ShardRow{.shard = p, .begin = b, .end = e});
  }
  auto shard_of = [&](int64_t idx) {
    for (int p = nshards - 1; p > 0; --p)
      if (idx >= c.shard_table[size_t(p)].begin) return p;
    return 0;
  };
  auto locate = [&](int64_t flat) {
    ElementLocation loc;
    loc.flat = flat;
    loc.index = unflatten(flat, dims);
    loc.tile.resize(loc.index.size());
    for (size_t d = 0; d < loc.index.size(); ++d) {
      int64_t t = d < spec.tile.size() && spec.tile[d] > 0 ? spec.tile[d] : std::max<int64_t>(dims[d], 1);
      loc.tile[d] = loc.index[d] / t;
    }
    loc.shards = nshards;
    loc.shard = pd >= 0 ? shard_of(loc.index[size_t(pd)]) : 0;
    return loc;
  };

  int64_t inner = 1;  // elements per step of the partitioned dim
  for (size_t d = size_t(std::max(pd, 0)) + 1; pd >= 0 && d < dims.size(); ++d) inner *= dims[d];

  CompareStats& s = c.stats;
  std::map<std::pair<int, std::vector<int64_t>>, TileRow> tiles;
  double sum_err2 = 0, sum_want2 = 0;
  const int64_t n = got.numel();
  s.count = n;
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const double want = in.want[size_t(i)];
    const double allowed = in.tolerance.atol + in.tolerance.rtol * in.magnitude[size_t(i)];
    double ratio = 0, err = 0;
    bool bad = false, unwritten = false;
    double g = 0;
    if (in.sentinels && is_sentinel(got.dtype(), got.data(), size_t(i))) {
      unwritten = true;
      bad = true;
      ratio = inf;
    } else {
      g = load_as_double(got.dtype(), got.data(), size_t(i));
      if (!std::isfinite(g) && std::isfinite(want)) {
        ++s.nonfinite;
        bad = true;
        ratio = inf;
      } else if (std::isfinite(g)) {
        err = std::fabs(g - want);
        ratio = allowed > 0 ? err / allowed : (err > 0 ? inf : 0);
        bad = !(err <= allowed);
        s.max_abs = std::max(s.max_abs, err);
        s.max_rel = std::max(s.max_rel, err / std::max(in.magnitude[size_t(i)], std::numeric_limits<double>::min()));
        s.max_ulp = std::max(s.max_ulp, ulp_distance(got.dtype(), g, want));
        sum_err2 += err * err;
        sum_want2 += want * want;
      }
    }
    const int shard = pd >= 0 ? shard_of((i / inner) % extent) : 0;
    c.shard_table[size_t(shard)].max_abs = std::max(c.shard_table[size_t(shard)].max_abs, err);
    if (!bad && ratio <= s.worst_ratio && s.worst.flat >= 0) continue;
    ElementLocation loc = locate(i);
    if (bad) {
      ++s.out_of_tolerance;
      if (unwritten) {
        if (s.unwritten++ == 0) s.first_unwritten = loc;
      }
      ShardRow& row = c.shard_table[size_t(loc.shard)];
      ++row.out_of_tolerance;
      row.unwritten += unwritten;
      TileRow& t = tiles[{loc.shard, loc.tile}];
      t.tile = loc.tile;
      t.shard = loc.shard;
      ++t.out_of_tolerance;
      t.max_abs = std::max(t.max_abs, err);
      t.worst_ratio = std::max(t.worst_ratio, ratio);
    }
    if (ratio > s.worst_ratio || s.worst.flat < 0) {
      s.worst_ratio = ratio;
      s.worst = loc;
      s.worst_got = unwritten ? std::numeric_limits<double>::quiet_NaN() : g;
      s.worst_want = want;
    }
  }
  s.nmse = sum_want2 > 0 ? sum_err2 / sum_want2 : sum_err2;
  for (auto& [key, row] : tiles) c.worst_tiles.push_back(row);
  std::sort(c.worst_tiles.begin(), c.worst_tiles.end(),
            [](const TileRow& a, const TileRow& b) { return a.worst_ratio > b.worst_ratio; });
  if (c.worst_tiles.size() > size_t(std::max(in.tiles_reported, 0))) c.worst_tiles.resize(size_t(in.tiles_reported));
  c.pass = s.out_of_tolerance == 0;
  return c;
}

}  // namespace recur::probe
