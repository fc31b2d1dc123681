// The registry entries of attention_decode and attention_prefill (attention_register.h).
#include "kernels/attention/attention_register.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/attention/attention.h"
#include "kernels/attention/attention_reference.h"
#include "kernels/attention/kv_cache.h"

namespace recur::kernels {
namespace {

using attention::KvDType;
using attention::PagedKvCache;

constexpr float kFp8Scale = 1.0f / 64.0f;


// Sequence lengths of the registered form from the raw `lens` input.
int64_t length_of(double raw, int64_t max_len) {
  const double a = std::fabs(raw);
  return 1 + int64_t(std::fmod(a, double(max_len)));
}

struct Built {
  PagedKvCache cache;
  std::vector<int> ids;
};

// A one-layer cache holding lens[b] tokens of rows k/v [B, max_len, HKV, D] (token-major),
// appended round-robin over the sequences.
Result<Built> build(const Shape& s, const std::vector<int64_t>& lens, int64_t max_len, const float* k, const float* v) {
  const int64_t B = s["B"], H = s["HKV"], D = s["D"], P = s["P"];
  int64_t pages = 0, longest = 0;
  for (int64_t n : lens) {
    pages += (n + P - 1) / P;
    longest = std::max(longest, n);
  }
  RECUR_ASSIGN_OR_RETURN(PagedKvCache cache,
                         PagedKvCache::create({.kv_heads = int(H), .head_dim = int(D), .page_size = int(P), .num_pages = pages,
                                               .layer_dtypes = {KvDType(s["C"])}}));
  if (KvDType(s["C"]) == KvDType::kFP8E4M3) {
    const std::vector<float> scales(size_t(H), kFp8Scale);
    RECUR_RETURN_IF_ERROR(cache.set_fp8_scales(0, scales, scales));
  }
  Built out{std::move(cache), {}};
  for (int64_t b = 0; b < B; ++b) {
    RECUR_ASSIGN_OR_RETURN(int id, out.cache.add_sequence());
    out.ids.push_back(id);
  }
  const size_t row = size_t(H * D);
  for (int64_t t = 0; t < longest; ++t)
    for (int64_t b = 0; b < B; ++b)
      if (t < lens[size_t(b)]) {
        const size_t off = (size_t(b) * size_t(max_len) + size_t(t)) * row;
        RECUR_RETURN_IF_ERROR(out.cache.append(out.ids[size_t(b)], 0, std::span<const float>(k + off, row),
                                               std::span<const float>(v + off, row)));
      }
  return out;
}

std::vector<int64_t> lens_of(const int32_t* raw, int64_t B, int64_t max_len) {
  std::vector<int64_t> lens(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) lens[size_t(b)] = length_of(double(raw[b]), max_len);
  return lens;
}

std::vector<float> to_float(const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); }

// The dequantized K and V of sequence `seq`, [len, HKV, D] each, in double.
void read_back(const PagedKvCache& cache, int seq, int64_t len, std::vector<double>& k, std::vector<double>& v) {
  const size_t row = size_t(cache.config().kv_heads) * size_t(cache.config().head_dim);
  std::vector<float> kr(row), vr(row);
  k.resize(size_t(len) * row);
  v.resize(size_t(len) * row);
  for (int64_t t = 0; t < len; ++t) {
    must(cache.read(seq, 0, t, kr, vr), "attention reference");
    std::copy(kr.begin(), kr.end(), k.begin() + t * int64_t(row));
    std::copy(vr.begin(), vr.end(), v.begin() + t * int64_t(row));
  }
}

std::vector<ShapeParam> shape_params(const char* len_name, int64_t len_default, const char* len_help) {
  return {{.name = "B", .default_value = 4, .max = 1024, .help = "sequences"},
          {.name = "HQ", .default_value = 8, .max = 256, .help = "query heads (multiple of HKV)"},
          {.name = "HKV", .default_value = 2, .max = 256, .help = "kv heads"},
          {.name = "D", .default_value = 128, .max = 1024, .help = "head dim"},
          {.name = len_name, .default_value = len_default, .max = int64_t(1) << 20, .help = len_help},
          {.name = "P", .default_value = 16, .max = 1024, .help = "page size (tokens)"},
          {.name = "C", .default_value = 1, .min = 0, .max = 4, .help = "cache dtype: 0 f32, 1 bf16, 2 fp8_e4m3, 3 int8, 4 f16"},
          {.name = "W", .default_value = 0, .min = 0, .max = int64_t(1) << 20,
           .help = "sliding window: a query at p sees keys in (p - W, p]; 0 = all"}};
}

Status check_heads(const Shape& s) {
  if (s["HQ"] % s["HKV"] != 0) return invalid_argument("HQ={} is not a multiple of HKV={}", s["HQ"], s["HKV"]);
  return ok_status();
}

using Dims = std::function<std::vector<int64_t>(const Shape&)>;

TensorSpec tensor(std::string name, DType dtype, Dims dims, std::vector<std::string> coords, std::vector<int64_t> tile) {
  return {.name = std::move(name), .dtype = dtype, .dims = std::move(dims), .coords = std::move(coords), .tile = std::move(tile),
          .partition_dim = 0};
}

TensorSpec lens_tensor() {
  return tensor("lens", DType::kI32, [](const Shape& s) { return std::vector<int64_t>{s["B"]}; }, {"seq"}, {1});
}

double elt_bytes(const Shape& s) { return double(attention::kv_dtype_size(KvDType(s["C"]))) + (s["C"] == 3 ? 4.0 / double(s["D"]) : 0.0); }

// Build plus attention over n tokens per sequence, read once: K/V read in fp32, written and
// read in the cache dtype; q and out fp32.
double call_bytes(const Shape& s, double n, double q_rows) {
  const double kv = double(s["B"]) * n * double(s["HKV"]) * double(s["D"]) * 2.0;
  return kv * (4.0 + 2.0 * elt_bytes(s)) + 2.0 * q_rows * double(s["HQ"]) * double(s["D"]) * 4.0 + 4.0 * double(s["B"]);
}

struct VariantInfo {
  const char* name;
  Isa isa;
  int split_k;
  const char* help;
};

constexpr VariantInfo kDecodeVariants[] = {
    {"scalar", Isa::kScalar, 1, "one lane, libm expf; the baseline"},
    {"avx2", Isa::kAvx2, 1, "8-wide dequant into an L1 page tile, FMA dots, vector exp per page"},
    {"avx512", Isa::kAvx512, 1, "16-wide dequant into an L1 page tile, FMA dots, vector exp per page"},
    {"avx2_split4", Isa::kAvx2, 4, "avx2 with the context cut into 4 page ranges, merged in order"},
    {"avx512_split4", Isa::kAvx512, 4, "avx512 with the context cut into 4 page ranges, merged in order"},
};

std::map<std::string, std::string> params_of(const VariantInfo& v) {
  return {{"isa", std::string(isa_name(v.isa))}, {"split_k", std::to_string(v.split_k)}};
}

// The first of n positions a query at position n - 1 sees under window W (0: all).
int64_t window_start(int64_t n, int64_t W) { return W > 0 ? std::max<int64_t>(0, n - W) : 0; }

KernelFn decode_call(const VariantInfo& info) {
  const attention::AttentionOptions variant{.isa = info.isa, .split_k = info.split_k};
  return [variant](const KernelCall& c) {
    const Shape& s = c.shape;
    attention::AttentionOptions options = variant;
    options.window = s["W"];
    const std::vector<int64_t> lens = lens_of(c.inputs[3].ptr<int32_t>(), s["B"], s["L"]);
    auto built = build(s, lens, s["L"], c.inputs[1].ptr<float>(), c.inputs[2].ptr<float>());
    must(built ? ok_status() : Status(unexpected(built.error())), "attention_decode");
    must(attention::decode(built->cache, 0, built->ids, c.inputs[0].ptr<float>(), int(s["HQ"]), c.outputs[0].ptr<float>(),
                           options),
         "attention_decode");
  };
}

void decode_reference(const Shape& s, std::span<const std::vector<double>> in, std::span<std::vector<double>> out,
                      std::span<std::vector<double>> mag) {
  const int64_t B = s["B"], HQ = s["HQ"], H = s["HKV"], D = s["D"], L = s["L"], G = HQ / H;
  std::vector<int64_t> lens(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) lens[size_t(b)] = length_of(in[3][size_t(b)], L);
  const std::vector<float> k = to_float(in[1]), v = to_float(in[2]);
  auto built = build(s, lens, L, k.data(), v.data());
  must(built ? ok_status() : Status(unexpected(built.error())), "attention_decode reference");
  const double scale = 1.0 / std::sqrt(double(float(D)));
  std::vector<double> kd, vd;
  for (int64_t b = 0; b < B; ++b) {
    read_back(built->cache, built->ids[size_t(b)], lens[size_t(b)], kd, vd);
    const int64_t lo = window_start(lens[size_t(b)], s["W"]);
    for (int64_t h = 0; h < HQ; ++h) {
      const size_t o = size_t((b * HQ + h) * D);
      const size_t kvo = size_t(lo * H * D + (h / G) * D);
      attention::reference_attention(in[0].data() + o, kd.data() + kvo, vd.data() + kvo, lens[size_t(b)] - lo, H * D,
                                     int(D), scale, out[0].data() + o, mag[0].data() + o);
    }
  }
}

KernelFn prefill_call(const VariantInfo& info) {
  const attention::AttentionOptions variant{.isa = info.isa, .split_k = 1};
  return [variant](const KernelCall& c) {
    const Shape& s = c.shape;
    attention::AttentionOptions options = variant;
    options.window = s["W"];
    const int64_t B = s["B"], T = s["T"], HQ = s["HQ"], H = s["HKV"], D = s["D"], P = s["P"];
    const std::vector<int64_t> lens = lens_of(c.inputs[3].ptr<int32_t>(), B, T);
    int64_t pages = 0, total = 0;
    for (int64_t n : lens) {
      pages += (n + P - 1) / P;
      total += n;
    }
    auto cache = PagedKvCache::create({.kv_heads = int(H), .head_dim = int(D), .page_size = int(P), .num_pages = pages,
                                       .layer_dtypes = {KvDType(s["C"])}});
    must(cache ? ok_status() : Status(unexpected(cache.error())), "attention_prefill");
    if (KvDType(s["C"]) == KvDType::kFP8E4M3) {
      const std::vector<float> scales(size_t(H), kFp8Scale);
      must(cache->set_fp8_scales(0, scales, scales), "attention_prefill");
    }
    // Pack the valid tokens of every sequence one after another (prefill()'s layout).
    std::vector<int> ids;
    std::vector<float> q(size_t(total * HQ * D)), k(size_t(total * H * D)), v(size_t(total * H * D)), o(q.size());
    int64_t row = 0;
    for (int64_t b = 0; b < B; ++b) {
      auto id = cache->add_sequence();
      must(id ? ok_status() : Status(unexpected(id.error())), "attention_prefill");
      ids.push_back(*id);
      const size_t qn = size_t(lens[size_t(b)] * HQ * D), kn = size_t(lens[size_t(b)] * H * D);
      std::memcpy(q.data() + row * HQ * D, c.inputs[0].ptr<float>() + b * T * HQ * D, qn * sizeof(float));
      std::memcpy(k.data() + row * H * D, c.inputs[1].ptr<float>() + b * T * H * D, kn * sizeof(float));
      std::memcpy(v.data() + row * H * D, c.inputs[2].ptr<float>() + b * T * H * D, kn * sizeof(float));
      row += lens[size_t(b)];
    }
    must(attention::prefill(*cache, 0, ids, lens, q.data(), k.data(), v.data(), int(HQ), o.data(), options),
         "attention_prefill");
    float* out = c.outputs[0].ptr<float>();
    std::memset(out, 0, size_t(B * T * HQ * D) * sizeof(float));
    row = 0;
    for (int64_t b = 0; b < B; ++b) {
      std::memcpy(out + b * T * HQ * D, o.data() + row * HQ * D, size_t(lens[size_t(b)] * HQ * D) * sizeof(float));
      row += lens[size_t(b)];
    }
  };
}

void prefill_reference(const Shape& s, std::span<const std::vector<double>> in, std::span<std::vector<double>> out,
                       std::span<std::vector<double>> mag) {
  const int64_t B = s["B"], T = s["T"], HQ = s["HQ"], H = s["HKV"], D = s["D"], G = HQ / H;
  std::vector<int64_t> lens(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) lens[size_t(b)] = length_of(in[3][size_t(b)], T);
  const std::vector<float> k = to_float(in[1]), v = to_float(in[2]);
  auto built = build(s, lens, T, k.data(), v.data());
  must(built ? ok_status() : Status(unexpected(built.error())), "attention_prefill reference");
  const double scale = 1.0 / std::sqrt(double(float(D)));
  std::fill(out[0].begin(), out[0].end(), 0.0);
  std::fill(mag[0].begin(), mag[0].end(), 0.0);
  std::vector<double> kd, vd;
  for (int64_t b = 0; b < B; ++b) {
    read_back(built->cache, built->ids[size_t(b)], lens[size_t(b)], kd, vd);
    for (int64_t t = 0; t < lens[size_t(b)]; ++t)
      for (int64_t h = 0; h < HQ; ++h) {
        const int64_t lo = window_start(t + 1, s["W"]);
        const size_t o = size_t(((b * T + t) * HQ + h) * D);
        const size_t kvo = size_t(lo * H * D + (h / G) * D);
        attention::reference_attention(in[0].data() + o, kd.data() + kvo, vd.data() + kvo, t + 1 - lo, H * D, int(D),
                                       scale, out[0].data() + o, mag[0].data() + o);
      }
  }
}

// docs/attention.md: |err| <= 1e-5 * magnitude for every cache dtype (the reference reads the
// stored values, so only fp32 rounding remains).
std::map<DType, Tolerance> tolerances() { return {{DType::kF32, Tolerance{.atol = 1e-30, .rtol = 1e-5}}}; }

}  // namespace

KernelSpec attention_decode_spec() {
  KernelSpec k;
  k.name = "attention_decode";
  k.engine_calls = true;  // engine/blocks/attention_mixer.cc (engine/engine_kernels.h)
  k.help = "GQA decode over a paged KV cache of dtype C (attention.h); lens -> 1 + |lens| mod L tokens; builds the cache per call";
  k.shape_params = shape_params("L", 300, "max tokens per sequence");
  k.check_shape = check_heads;
  auto bqd = [](const Shape& s) { return std::vector<int64_t>{s["B"], s["HQ"], s["D"]}; };
  auto kv = [](const Shape& s) { return std::vector<int64_t>{s["B"], s["L"], s["HKV"], s["D"]}; };
  k.inputs = {tensor("q", DType::kF32, bqd, {"seq", "head", "dim"}, {1, 1, 32}),
              tensor("k", DType::kF32, kv, {"seq", "token", "head", "dim"}, {1, 16, 1, 32}),
              tensor("v", DType::kF32, kv, {"seq", "token", "head", "dim"}, {1, 16, 1, 32}), lens_tensor()};
  k.outputs = {tensor("out", DType::kF32, bqd, {"seq", "head", "dim"}, {1, 1, 32})};
  k.reference = decode_reference;
  k.cost.bytes = [](const Shape& s) { return call_bytes(s, double(s["L"] + 1) / 2.0, double(s["B"])); };
  k.cost.flops = [](const Shape& s) {
    return 4.0 * double(s["B"]) * double(s["HQ"]) * double(s["L"] + 1) / 2.0 * double(s["D"]);
  };
  k.tolerances = tolerances();
  k.partitioning = Partitioning{.param = "B"};
  k.regions = {{"attend", "attend_impl"}, {"dequant", "dequant_run"}, {"cache_write", "write_token"}};
  for (const VariantInfo& v : kDecodeVariants)
    k.variants.push_back({.name = v.name, .isa = v.isa, .params = params_of(v), .help = v.help, .run = decode_call(v)});
  return k;
}

KernelSpec attention_prefill_spec() {
  KernelSpec k;
  k.name = "attention_prefill";
  k.engine_calls = true;  // engine/blocks/attention_mixer.cc (engine/engine_kernels.h)
  k.help = "causal GQA prefill of 1 + |lens| mod T tokens per sequence into a paged KV cache of dtype C (attention.h)";
  k.shape_params = shape_params("T", 40, "max new tokens per sequence");
  k.shape_params[0].default_value = 2;
  k.check_shape = check_heads;
  auto tq = [](const Shape& s) { return std::vector<int64_t>{s["B"], s["T"], s["HQ"], s["D"]}; };
  auto tkv = [](const Shape& s) { return std::vector<int64_t>{s["B"], s["T"], s["HKV"], s["D"]}; };
  k.inputs = {tensor("q", DType::kF32, tq, {"seq", "token", "head", "dim"}, {1, 16, 1, 32}),
              tensor("k", DType::kF32, tkv, {"seq", "token", "head", "dim"}, {1, 16, 1, 32}),
              tensor("v", DType::kF32, tkv, {"seq", "token", "head", "dim"}, {1, 16, 1, 32}), lens_tensor()};
  k.outputs = {tensor("out", DType::kF32, tq, {"seq", "token", "head", "dim"}, {1, 16, 1, 32})};
  k.reference = prefill_reference;
  // Causal: token t reads t + 1 cached tokens, (n + 1) n / 2 per sequence of n tokens.
  k.cost.bytes = [](const Shape& s) {
    const double n = double(s["T"] + 1) / 2.0;
    const double reads = double(s["B"]) * (n + 1) * n / 2.0 * double(s["HKV"]) * double(s["D"]) * 2.0 * elt_bytes(s);
    return call_bytes(s, n, double(s["B"]) * n) - double(s["B"]) * n * double(s["HKV"]) * double(s["D"]) * 2.0 * elt_bytes(s) + reads;
  };
  k.cost.flops = [](const Shape& s) {
    const double n = double(s["T"] + 1) / 2.0;
    return 4.0 * double(s["B"]) * double(s["HQ"]) * (n + 1) * n / 2.0 * double(s["D"]);
  };
  k.tolerances = tolerances();
  k.partitioning = Partitioning{.param = "B"};
  k.regions = {{"attend", "attend_impl"}, {"dequant", "dequant_run"}, {"cache_write", "write_token"}};
  for (const VariantInfo& v : kDecodeVariants)
    if (v.split_k == 1)
      k.variants.push_back({.name = v.name, .isa = v.isa, .params = {{"isa", std::string(isa_name(v.isa))}}, .help = v.help,
                            .run = prefill_call(v)});
  return k;
}

}  // namespace recur::kernels
