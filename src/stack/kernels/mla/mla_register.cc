// The registry entries of mla_decode and mla_prefill (mla_register.h).
#include "kernels/mla/mla_register.h"

#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "kernels/mla/mla.h"
#include "kernels/mla/mla_reference.h"

namespace recur::kernels {
// Named, not anonymous: the unity build shares one anonymous namespace with attention_register.cc.
namespace mla_entries {

using attention::KvDType;
using attention::PagedKvCache;

constexpr float kFp8Scale = 1.0f / 64.0f;

mla::Dims dims_of(const Shape& s) {
  return {.heads = int(s["H"]), .nope = int(s["N"]), .rope = int(s["E"]), .rank = int(s["R"]), .v_dim = int(s["V"])};
}

// The tokens per sequence: 1 + |raw| mod max_len.
std::vector<int64_t> lens_of(const int32_t* raw, int64_t B, int64_t max_len) {
  std::vector<int64_t> lens(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) lens[size_t(b)] = 1 + int64_t(std::fmod(std::fabs(double(raw[b])), double(max_len)));
  return lens;
}

struct Built {
  PagedKvCache cache;
  std::vector<int> ids;
};

// A one-layer latent cache holding lens[b] rows of lat [B, max_len, R + E], appended
// round-robin over the sequences (interleaved page tables).
Built build(const Shape& s, const std::vector<int64_t>& lens, int64_t max_len, const float* lat) {
  const int64_t B = s["B"], P = s["P"], W = s["R"] + s["E"];
  int64_t pages = 0, longest = 0;
  for (int64_t n : lens) {
    pages += (n + P - 1) / P;
    longest = std::max(longest, n);
  }
  auto cache = PagedKvCache::create({.kv_heads = 1, .head_dim = int(W), .page_size = int(P), .num_pages = pages,
                                     .layer_dtypes = {KvDType(s["C"])}, .keys_only = true});
  must(cache ? ok_status() : Status(unexpected(cache.error())), "mla");
  if (KvDType(s["C"]) == KvDType::kFP8E4M3) must(cache->set_fp8_scales(0, {&kFp8Scale, 1}, {&kFp8Scale, 1}), "mla");
  Built out{std::move(*cache), {}};
  for (int64_t b = 0; b < B; ++b) {
    auto id = out.cache.add_sequence();
    must(id ? ok_status() : Status(unexpected(id.error())), "mla");
    out.ids.push_back(*id);
  }
  for (int64_t t = 0; t < longest; ++t)
    for (int64_t b = 0; b < B; ++b)
      if (t < lens[size_t(b)])
        must(out.cache.append(out.ids[size_t(b)], 0, {lat + (b * max_len + t) * W, size_t(W)}, {}), "mla");
  return out;
}

// The stored latents of one sequence in double, [len, R + E].
std::vector<double> read_back(const Built& b, size_t seq, int64_t len, int64_t W) {
  std::vector<float> row(static_cast<size_t>(W));
  std::vector<double> out;
  for (int64_t t = 0; t < len; ++t) {
    must(b.cache.read(b.ids[seq], 0, t, row, {}), "mla reference");
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

double scale_of(const Shape& s) { return 1.0 / std::sqrt(double(s["N"] + s["E"])); }

// Inputs: q, lat, wk, wv, lens. Decode: q [B, H, N+E], lat [B, L, R+E], out [B, H, V];
// prefill: q [B, T, H, N+E], lat [B, T, R+E], out [B, T, H, V] (rows past a length are 0).
KernelFn call(mla::Variant variant, Isa isa, bool prefill) {
  return [variant, isa, prefill](const KernelCall& c) {
    const Shape& s = c.shape;
    const mla::Dims d = dims_of(s);
    const int64_t B = s["B"], T = prefill ? s["T"] : s["L"], QW = d.heads * d.q_width(), OW = d.heads * d.v_dim;
    const std::vector<int64_t> lens = lens_of(c.inputs[4].ptr<int32_t>(), B, T);
    const Built built = build(s, lens, T, c.inputs[1].ptr<float>());
    const mla::Weights w{.wk = c.inputs[2].ptr<float>(), .wv = c.inputs[3].ptr<float>()};
    const float scale = float(scale_of(s));
    float* out = c.outputs[0].ptr<float>();
    if (!prefill) {
      must(mla::attend(built.cache, 0, built.ids, std::vector<int64_t>(size_t(B), 1), c.inputs[0].ptr<float>(), d, w,
                       scale, variant, isa, out),
           "mla_decode");
      return;
    }
    // Pack each sequence's valid rows one after another (attend()'s layout), then unpack.
    int64_t total = 0;
    for (int64_t n : lens) total += n;
    std::vector<float> q(size_t(total * QW)), o(size_t(total * OW));
    int64_t row = 0;
    for (int64_t b = 0; b < B; ++b) {
      std::memcpy(q.data() + row * QW, c.inputs[0].ptr<float>() + b * T * QW, size_t(lens[size_t(b)] * QW) * sizeof(float));
      row += lens[size_t(b)];
    }
    must(mla::attend(built.cache, 0, built.ids, lens, q.data(), d, w, scale, variant, isa, o.data()), "mla_prefill");
    std::memset(out, 0, size_t(B * T * OW) * sizeof(float));
    row = 0;
    for (int64_t b = 0; b < B; ++b) {
      std::memcpy(out + b * T * OW, o.data() + row * OW, size_t(lens[size_t(b)] * OW) * sizeof(float));
      row += lens[size_t(b)];
    }
  };
}

ReferenceFn reference(bool prefill) {
  return [prefill](const Shape& s, std::span<const std::vector<double>> in, std::span<std::vector<double>> out,
                   std::span<std::vector<double>> mag) {
    const mla::Dims d = dims_of(s);
    const int64_t B = s["B"], T = prefill ? s["T"] : s["L"], H = d.heads, QW = d.q_width(), V = d.v_dim;
    std::vector<int64_t> lens(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) lens[size_t(b)] = 1 + int64_t(std::fmod(std::fabs(in[4][size_t(b)]), double(T)));
    const std::vector<float> lat(in[1].begin(), in[1].end());
    const Built built = build(s, lens, T, lat.data());
    std::fill(out[0].begin(), out[0].end(), 0.0);
    std::fill(mag[0].begin(), mag[0].end(), 0.0);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t n = lens[size_t(b)];
      const std::vector<double> stored = read_back(built, size_t(b), n, d.latent_width());
      const int64_t rows = prefill ? n : 1;
      for (int64_t j = 0; j < rows; ++j)
        for (int64_t h = 0; h < H; ++h) {
          const int64_t qrow = prefill ? (b * T + j) * H + h : b * H + h;
          const int64_t visible = prefill ? j + 1 : n;
          reference_row(in[0].data() + qrow * QW, stored.data(), visible,
                        in[2].data() + h * int64_t(d.rank) * d.nope, in[3].data() + h * V * d.rank, d, scale_of(s),
                        out[0].data() + qrow * V, mag[0].data() + qrow * V);
        }
    }
  };
}

TensorSpec tensor(std::string name, DType dtype, std::function<std::vector<int64_t>(const Shape&)> dims,
                  std::vector<std::string> coords, int partition_dim) {
  std::vector<int64_t> tile(coords.size(), 1);
  tile.back() = 32;
  return {.name = std::move(name), .dtype = dtype, .dims = std::move(dims), .coords = std::move(coords),
          .tile = std::move(tile), .partition_dim = partition_dim};
}

KernelSpec spec(bool prefill) {
  KernelSpec k;
  k.name = prefill ? "mla_prefill" : "mla_decode";
  k.help = prefill ? "causal MLA prefill of 1 + |lens| mod T tokens per sequence over a paged latent cache of dtype C (mla.h)"
                   : "MLA decode over 1 + |lens| mod L cached latents per sequence, paged, dtype C (mla.h)";
  const char* len = prefill ? "T" : "L";
  k.shape_params = {{.name = "B", .default_value = prefill ? 2 : 4, .max = 1024, .help = "sequences"},
                    {.name = "H", .default_value = 4, .max = 256, .help = "heads"},
                    {.name = "N", .default_value = 32, .max = 1024, .help = "nope dims of q and k per head"},
                    {.name = "E", .default_value = 16, .min = 0, .max = 1024, .help = "rope dims (shared key part)"},
                    {.name = "R", .default_value = 64, .max = 4096, .help = "kv_lora_rank (latent width)"},
                    {.name = "V", .default_value = 32, .max = 1024, .help = "value dims per head"},
                    {.name = len, .default_value = prefill ? 24 : 100, .max = int64_t(1) << 20,
                     .help = prefill ? "max new tokens per sequence" : "max cached tokens per sequence"},
                    {.name = "P", .default_value = 16, .max = 1024, .help = "page size (tokens)"},
                    {.name = "C", .default_value = 0, .min = 0, .max = 4, .help = "cache dtype: 0 f32, 1 bf16, 2 fp8_e4m3, 3 int8, 4 f16"}};
  const std::string ln = len;
  auto q = [prefill](const Shape& s) {
    return prefill ? std::vector<int64_t>{s["B"], s["T"], s["H"], s["N"] + s["E"]}
                   : std::vector<int64_t>{s["B"], s["H"], s["N"] + s["E"]};
  };
  auto o = [prefill](const Shape& s) {
    return prefill ? std::vector<int64_t>{s["B"], s["T"], s["H"], s["V"]} : std::vector<int64_t>{s["B"], s["H"], s["V"]};
  };
  auto lat = [ln](const Shape& s) { return std::vector<int64_t>{s["B"], s[ln], s["R"] + s["E"]}; };
  std::vector<std::string> qc = prefill ? std::vector<std::string>{"seq", "token", "head", "dim"}
                                        : std::vector<std::string>{"seq", "head", "dim"};
  k.inputs = {tensor("q", DType::kF32, q, qc, 0),
              tensor("lat", DType::kF32, lat, {"seq", "token", "dim"}, 0),
              tensor("wk", DType::kF32, [](const Shape& s) { return std::vector<int64_t>{s["H"], s["R"], s["N"]}; },
                     {"head", "rank", "dim"}, -1),
              tensor("wv", DType::kF32, [](const Shape& s) { return std::vector<int64_t>{s["H"], s["V"], s["R"]}; },
                     {"head", "dim", "rank"}, -1),
              tensor("lens", DType::kI32, [](const Shape& s) { return std::vector<int64_t>{s["B"]}; }, {"seq"}, 0)};
  k.inputs.back().tile = {1};
  k.outputs = {tensor("out", DType::kF32, o, qc, 0)};
  k.reference = reference(prefill);
  // Mean length n: the cache is written (fp32 in, dtype out) and read once, W_UK and W_UV read
  // once; per (row, head): W_UK^T q (2RN), scores (2(R+E) per position), the latent sum (2R per
  // position), W_UV (2VR).
  k.cost.bytes = [ln, prefill](const Shape& s) {
    const double n = double(s[ln] + 1) / 2, W = double(s["R"] + s["E"]), B = double(s["B"]);
    const double elt = double(attention::kv_dtype_size(KvDType(s["C"])));
    const double rows = prefill ? B * n : B;
    return B * n * W * (4 + 2 * elt) + double(s["H"] * s["R"] * (s["N"] + s["V"])) * 4 +
           rows * double(s["H"]) * double(s["N"] + s["E"] + s["V"]) * 4;
  };
  k.cost.flops = [ln, prefill](const Shape& s) {
    const double n = double(s[ln] + 1) / 2, B = double(s["B"]), H = double(s["H"]), R = double(s["R"]);
    const double rows = prefill ? B * n : B, positions = prefill ? B * (n + 1) * n / 2 : B * n;
    return rows * H * 2 * R * double(s["N"] + s["V"]) + positions * H * 2 * (2 * R + double(s["E"]));
  };
  k.tolerances = {{DType::kF32, Tolerance{.atol = 1e-30, .rtol = 2e-5}}};
  k.partitioning = Partitioning{.param = "B"};
  k.engine_calls = true;  // engine/blocks/mla_mixer.cc (deepseek2, kimi-linear; the knob-efficacy check runs both)
  // The blocked paths first, best ISA first: kernel.mla_*.variant=auto takes the best the machine runs.
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2, Isa::kScalar})
    k.variants.push_back({.name = fmt::format("blocked_{}", isa_name(isa)), .isa = isa,
                          .params = {{"form", "blocked"}, {"isa", std::string(isa_name(isa))}},
                          .help = fmt::format("absorbed, on blocks of query rows and heads as GEMM-shaped {} loops "
                                              "(each latent read once per micro-block of rows; mla_ops.h)",
                                              isa_name(isa)),
                          .run = call(mla::Variant::kBlocked, isa, prefill)});
  for (mla::Variant v : {mla::Variant::kAbsorbed, mla::Variant::kExpand})
    k.variants.push_back({.name = std::string(mla::variant_name(v)), .isa = Isa::kScalar,
                          .params = {{"form", std::string(mla::variant_name(v))}},
                          .help = v == mla::Variant::kAbsorbed
                                      ? "q_nope absorbed into latent space by W_UK, attention over latents, then W_UV, "
                                        "one (row, head) at a time, scalar"
                                      : "every cached latent decompressed by W_UK and W_UV per head, then plain attention",
                          .run = call(v, Isa::kScalar, prefill)});
  return k;
}

}  // namespace mla_entries

KernelSpec mla_decode_spec() { return mla_entries::spec(false); }
KernelSpec mla_prefill_spec() { return mla_entries::spec(true); }

}  // namespace recur::kernels
