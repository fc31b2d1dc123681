#include "probe/roofline_measure.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/clock.h"
#include "core/cpu_features.h"
#include "core/log.h"
#include "probe/roofline_kernels.h"

namespace recur {
namespace {

using roofline::ComputeLoop;

volatile double g_sink = 0;  // keeps every loop's result alive
volatile uint64_t g_sink_bits = 0;

// A 2 MiB-aligned buffer with transparent huge pages requested, so the bandwidth probe
// measures DRAM and not TLB misses (STREAM runs see the same when THP is on).
struct HugeBuffer {
  explicit HugeBuffer(size_t bytes) : size(bytes) {
    constexpr size_t kHuge = size_t(2) << 20;
    size = (bytes + kHuge - 1) / kHuge * kHuge;
    data = static_cast<std::byte*>(std::aligned_alloc(kHuge, size));
    if (data == nullptr) throw std::bad_alloc();
    madvise(data, size, MADV_HUGEPAGE);
  }
  ~HugeBuffer() { std::free(data); }
  std::byte* data;
  size_t size;
};

// Four times the last-level cache, within [minimum, maximum]: VMs sometimes report an
// implausible L3 (this one says 508 MiB), and the cap keeps the probe under its time budget.
size_t bandwidth_buffer_bytes(const std::vector<CacheLevel>& caches, size_t minimum, size_t maximum) {
  uint64_t largest = 0;
  for (const CacheLevel& c : caches) largest = std::max(largest, c.size_bytes);
  return std::clamp<size_t>(size_t(largest) * 4, minimum, maximum);
}

// Runs `loop` for about target_ms per sample on `threads` workers and returns G-ops/s samples.
std::vector<double> compute_samples(ThreadPool& pool, int threads, const ComputeLoop& loop,
                                    const RooflineOptions& o) {
  int64_t iters = 1 << 14;
  for (;;) {  // calibrate on one thread: grow until a run takes at least a quarter of the target
    int64_t t0 = now_ns();
    g_sink = g_sink + loop.run(iters);
    double ms = double(now_ns() - t0) / 1e6;
    if (ms >= o.compute_sample_ms / 4 || iters > (int64_t(1) << 40)) {
      iters = std::max<int64_t>(1, int64_t(double(iters) * o.compute_sample_ms / std::max(ms, 1e-3)));
      break;
    }
    iters *= 4;
  }
  std::vector<double> out;
  for (int s = 0; s < o.samples; ++s) {
    int64_t t0 = now_ns();
    pool.parallel_for(threads, [&](int64_t, int64_t, int) { g_sink = g_sink + loop.run(iters); });
    double ns = double(now_ns() - t0);
    out.push_back(double(iters) * loop.ops_per_iter * threads / ns);
  }
  return out;
}

// One timed pass of `read` over buf on `threads` workers, in GB/s.
double read_pass(ThreadPool& pool, int threads, const HugeBuffer& buf, roofline::ReadFn read) {
  const size_t blocks = buf.size / 256;
  int64_t t0 = now_ns();
  pool.parallel_for(threads, [&](int64_t b, int64_t, int) {
    Range r = static_chunk(int64_t(blocks), threads, int(b));
    g_sink_bits = g_sink_bits + read(buf.data + r.begin * 256, size_t(r.end - r.begin) * 256);
  });
  return double(buf.size) / double(now_ns() - t0);  // bytes per ns = GB/s
}

// The read peak: the plain sum-read and the prefetching one (roofline_kernels.h), their passes
// interleaved (alternating which goes first) so both see the same machine; the faster reader's
// samples are the peak, and the method names both medians.
PeakMeasurement read_peak(ThreadPool& pool, int threads, const HugeBuffer& buf, const RooflineOptions& o,
                          const std::string& how) {
  roofline::ReadFn plain = roofline::kRead.get(), prefetch = roofline::kReadPrefetch.get();
  std::vector<double> a, b;
  for (int s = 0; s < o.samples; ++s) {
    if (s % 2 == 0) {
      a.push_back(read_pass(pool, threads, buf, plain));
      b.push_back(read_pass(pool, threads, buf, prefetch));
    } else {
      b.push_back(read_pass(pool, threads, buf, prefetch));
      a.push_back(read_pass(pool, threads, buf, plain));
    }
  }
  PeakMeasurement pa = summarize_samples(a, threads, "GB/s", ""), pb = summarize_samples(b, threads, "GB/s", "");
  const bool prefetch_wins = pb.median > pa.median;
  PeakMeasurement m = summarize_samples(prefetch_wins ? b : a, threads, "GB/s", "");
  m.method = fmt::format("{}; the faster of a plain sum-read ({:.1f} GB/s) and one prefetching {} bytes ahead "
                         "({:.1f} GB/s), interleaved: {}",
                         how, pa.median, roofline::kPrefetchAhead, pb.median, prefetch_wins ? "prefetching" : "plain");
  return m;
}

std::string isa_label() { return std::string(isa_name(active_isa())); }

// Runs one probe and stamps its wall time on the result.
template <typename Probe>
PeakMeasurement timed(Probe&& probe) {
  int64_t t0 = now_ns();
  PeakMeasurement m = probe();
  m.elapsed_s = double(now_ns() - t0) / 1e9;
  return m;
}

}  // namespace

PeakMeasurement summarize_samples(std::vector<double> samples, int threads, const char* unit,
                                  std::string method) {
  PeakMeasurement m;
  m.samples = int(samples.size());
  m.threads = threads;
  m.unit = unit;
  m.method = std::move(method);
  if (samples.empty()) return m;
  std::sort(samples.begin(), samples.end());
  size_t n = samples.size();
  m.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  m.min = samples.front();
  m.max = samples.back();
  return m;
}

Roofline measure_roofline(ThreadPool& pool, const std::vector<CacheLevel>& caches,
                          const RooflineOptions& o) {
  Roofline r;
  const int all = pool.size();
  const CpuFeatures& f = cpu_features();
  const Isa isa = active_isa();

  {
    HugeBuffer buf(bandwidth_buffer_bytes(caches, o.min_buffer_bytes, o.max_buffer_bytes));
    // First touch in parallel, so page faults are not timed and pages spread over threads.
    pool.parallel_for(int64_t(buf.size / 4096), [&](int64_t b, int64_t e, int) {
      std::memset(buf.data + b * 4096, int(b & 0x7f), size_t(e - b) * 4096);
    });
    const std::string how = fmt::format("sum-read of a {} MiB buffer ({} loads), one pass per sample",
                                        buf.size >> 20, isa_label());
    read_pass(pool, 1, buf, roofline::kRead.get());  // warm-up pass
    r.read_bw_1t = timed([&] { return read_peak(pool, 1, buf, o, how); });
    r.read_bw_all = timed([&] { return read_peak(pool, all, buf, o, how + ", buffer split across threads"); });
  }

  const ComputeLoop* fma = roofline::kFma.get();
  std::string fma_how = fmt::format("12 independent {} chains, ~{:.0f} ms per sample", fma->instruction,
                                    o.compute_sample_ms);
  r.fp32_fma_1t = timed([&] { return summarize_samples(compute_samples(pool, 1, *fma, o), 1, "GFLOP/s", fma_how); });
  r.fp32_fma_all =
      timed([&] { return summarize_samples(compute_samples(pool, all, *fma, o), all, "GFLOP/s", fma_how); });

  if (isa == Isa::kAvx512 && f.avx512bf16) {
    r.bf16_dot_1t = timed([&] {
      return summarize_samples(compute_samples(pool, 1, roofline::kBf16Avx512, o), 1, "GFLOP/s",
                               "12 independent vdpbf16ps zmm chains");
    });
  } else {
    r.bf16_dot_1t = summarize_samples({}, 1, "GFLOP/s",
                                      "not measured: needs AVX512-BF16 at the active ISA level; "
                                      "bf16 kernels convert to fp32 and run at the fp32 FMA peak");
  }

  const ComputeLoop* int8 = &roofline::kInt8Scalar;
  if (isa == Isa::kAvx512 && f.avx512vnni) int8 = &roofline::kInt8Avx512Vnni;
  else if (isa >= Isa::kAvx2) int8 = &roofline::kInt8Avx2;
  r.int8_dot_1t = timed([&] {
    return summarize_samples(compute_samples(pool, 1, *int8, o), 1, "GOP/s",
                             fmt::format("independent {} chains", int8->instruction));
  });
  LOG_DEBUG("roofline measured at isa {}", isa_label());
  return r;
}

}  // namespace recur
