// recur's KDA core against ggml's GATED_DELTA_NET (KDA mode: a per-channel gate) on the same
// inputs (issue #27: the kimi-linear hybrid's KDA core must equal ggml's). Built and run by
// benchmarks/kda_vs_ggml_gdn.sh against a ggml build outside this repository.
//
// The two take the same recurrence with different input conventions, which this driver bridges:
//   - recur normalises q and k inside (q / sqrt(sum q^2 + eps) * K^-1/2, k likewise without the
//     scale) and applies sigmoid to the beta logits; ggml takes q and k already normalised and beta
//     already squashed, and scales the output by S_v^-1/2 (the same K^-1/2 since K == V here).
//     So ggml gets q and k normalised here in fp32 with recur's formula and sigmoid(b).
//   - the gate: recur's kPrecomputed form reads the log-decay g itself, as ggml does.
//   - grouped heads: recur's value head h reads key head h / (HV / HK); ggml's reads h % HK. ggml
//     gets q and k expanded to HV heads in recur's mapping, so both read the same key head.
//   - state: ggml's per-head state is [V][K] (s[j * S + i] = S[i][j]): recur's StateLayout::kVK.
// Every recur path (prefill: recurrent, chunked64, chunked16; decode token by token: each decode
// variant) is compared with ggml on outputs and final state. Prints one line per case and exits
// 1 when any relative error exceeds the tolerance.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "ggml-cpu.h"
#include "ggml.h"
#include "kernels/kda/kda.h"

namespace {

using recur::kda::DecodeVariant;
using recur::kda::PrefillVariant;

struct Case {
  int64_t batch, tokens, hk, hv, dim;
  bool scalar_gate = false;  // gated DeltaNet (Qwen3-Next): one decay per head, broadcast over K for recur
};

struct Data {
  std::vector<float> q, k, v, g, b, state;
};

Data random_inputs(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_real_distribution<float> decay(-2.f, -0.01f);
  Data d;
  auto fill = [&](std::vector<float>& x, size_t n, auto& dist) {
    x.resize(n);
    for (float& e : x) e = dist(rng);
  };
  fill(d.q, size_t(c.batch * c.tokens * c.hk * c.dim), normal);
  fill(d.k, size_t(c.batch * c.tokens * c.hk * c.dim), normal);
  fill(d.v, size_t(c.batch * c.tokens * c.hv * c.dim), normal);
  fill(d.g, size_t(c.batch * c.tokens * c.hv * c.dim), decay);
  if (c.scalar_gate)  // one value per (token, head): recur reads it broadcast over the K channels
    for (size_t row = 0; row < d.g.size(); row += size_t(c.dim)) std::fill_n(d.g.begin() + row, c.dim, d.g[row]);
  fill(d.b, size_t(c.batch * c.tokens * c.hv), normal);
  fill(d.state, size_t(c.batch * c.hv * c.dim * c.dim), normal);
  for (float& s : d.state) s *= 0.1f;
  return d;
}

// recur's normalisation of one head row (kda.h), so ggml sees what recur computes with.
void normalise(const float* x, float* out, int64_t n, float eps, float scale) {
  float ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float r = scale / std::sqrt(ss + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * r;
}

// ggml's GATED_DELTA_NET on d: fills out [B, T, HV, V] and state [B, HV, V, K].
void run_ggml(const Case& c, const Data& d, float eps, std::vector<float>& out, std::vector<float>& state) {
  const int64_t B = c.batch, T = c.tokens, S = c.dim, HV = c.hv, group = c.hv / c.hk;
  const size_t bytes = size_t(64) << 20;
  ggml_init_params params{bytes, nullptr, false};
  ggml_context* ctx = ggml_init(params);
  ggml_tensor* q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, S, HV, T, B);
  ggml_tensor* k = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, S, HV, T, B);
  ggml_tensor* v = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, S, HV, T, B);
  ggml_tensor* g = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, c.scalar_gate ? 1 : S, HV, T, B);
  ggml_tensor* beta = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 1, HV, T, B);
  ggml_tensor* s0 = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, S, S, HV, B);
  auto* qd = static_cast<float*>(q->data);
  auto* kd = static_cast<float*>(k->data);
  const float scale = 1.0f;  // ggml scales the output by S^-1/2 itself
  for (int64_t bt = 0; bt < B * T; ++bt)
    for (int64_t h = 0; h < HV; ++h) {
      const int64_t src = (bt * c.hk + h / group) * S, dst = (bt * HV + h) * S;
      normalise(d.q.data() + src, qd + dst, S, eps, scale);
      normalise(d.k.data() + src, kd + dst, S, eps, 1.0f);
    }
  std::copy(d.v.begin(), d.v.end(), static_cast<float*>(v->data));
  auto* gd = static_cast<float*>(g->data);
  if (c.scalar_gate)
    for (int64_t row = 0; row < B * T * HV; ++row) gd[row] = d.g[size_t(row * S)];
  else
    std::copy(d.g.begin(), d.g.end(), gd);
  auto* bd = static_cast<float*>(beta->data);
  for (size_t i = 0; i < d.b.size(); ++i) bd[i] = 1.0f / (1.0f + std::exp(-d.b[i]));
  std::copy(d.state.begin(), d.state.end(), static_cast<float*>(s0->data));
  ggml_tensor* r = ggml_gated_delta_net(ctx, q, k, v, g, beta, s0, 1);
  ggml_cgraph* gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, r);
  ggml_graph_compute_with_ctx(ctx, gf, 1);
  const float* rd = static_cast<const float*>(r->data);
  out.assign(rd, rd + B * T * HV * S);
  state.assign(rd + B * T * HV * S, rd + B * T * HV * S + B * HV * S * S);
  ggml_free(ctx);
}

double max_rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, double(std::fabs(a[i] - b[i])));
    den = std::max(den, double(std::fabs(b[i])));
  }
  return num / std::max(den, 1e-30);
}

}  // namespace

int main(int argc, char** argv) {
  const double tol = argc > 1 ? std::stod(argv[1]) : 1e-4;
  // The last: Qwen3-Next-80B-A3B's gated DeltaNet heads (linear_num_key_heads 16, linear_num_value_heads 32,
  // head dims 128), over more tokens than one 64-chunk.
  const Case cases[] = {{2, 17, 4, 4, 64}, {1, 70, 2, 4, 128}, {3, 5, 1, 2, 32}, {2, 9, 2, 4, 64, true},
                        {1, 70, 16, 32, 128, true}};
  recur::kda::Params params;
  params.gate = recur::kda::GateForm::kPrecomputed;
  params.layout = recur::kda::StateLayout::kVK;
  recur::kda::Workspace ws;
  int failures = 0;
  uint32_t seed = 1;
  for (const Case& c : cases) {
    const Data d = random_inputs(c, seed++);
    std::vector<float> want_out, want_state;
    run_ggml(c, d, params.eps, want_out, want_state);
    const recur::kda::Shape shape{c.batch, c.tokens, c.hk, c.hv, c.dim, c.dim};
    const recur::kda::Inputs in{d.q.data(), d.k.data(), d.v.data(), d.g.data(), d.b.data(), nullptr, nullptr};
    auto report = [&](const std::string& path, const std::vector<float>& out, const std::vector<float>& state) {
      const double eo = max_rel_err(out, want_out), es = max_rel_err(state, want_state);
      const bool ok = eo <= tol && es <= tol;
      failures += !ok;
      std::printf("B=%lld T=%lld HK=%lld HV=%lld K=V=%lld %-6s %-24s out %.2e state %.2e %s\n", (long long)c.batch,
                  (long long)c.tokens, (long long)c.hk, (long long)c.hv, (long long)c.dim,
                  c.scalar_gate ? "scalar" : "kda", path.c_str(), eo, es, ok ? "ok" : "MISMATCH");
    };
    for (PrefillVariant pv : recur::kda::kAllPrefillVariants) {
      std::vector<float> state = d.state, out(want_out.size());
      if (auto st = recur::kda::prefill(shape, params, in, state.data(), out.data(), pv, nullptr, ws); !st) {
        std::fprintf(stderr, "recur prefill: %s\n", st.error().message().c_str());
        return 2;
      }
      report(std::string("prefill ") + std::string(recur::kda::prefill_variant_name(pv)), out, state);
    }
    // Decode, token by token: each step one token of every sequence.
    for (DecodeVariant dv : recur::kda::kAllDecodeVariants) {
      std::vector<float> state = d.state, out(want_out.size());
      const int64_t qk = c.hk * c.dim, vv = c.hv * c.dim;
      std::vector<float> q1(size_t(c.batch * qk)), k1(q1.size()), v1(size_t(c.batch * vv)), g1(v1.size()),
          b1(size_t(c.batch * c.hv)), o1(v1.size());
      for (int64_t t = 0; t < c.tokens; ++t) {
        for (int64_t s = 0; s < c.batch; ++s) {
          const int64_t bt = s * c.tokens + t;
          std::copy_n(d.q.begin() + bt * qk, qk, q1.begin() + s * qk);
          std::copy_n(d.k.begin() + bt * qk, qk, k1.begin() + s * qk);
          std::copy_n(d.v.begin() + bt * vv, vv, v1.begin() + s * vv);
          std::copy_n(d.g.begin() + bt * vv, vv, g1.begin() + s * vv);
          std::copy_n(d.b.begin() + bt * c.hv, c.hv, b1.begin() + s * c.hv);
        }
        const recur::kda::Shape one{c.batch, 1, c.hk, c.hv, c.dim, c.dim};
        const recur::kda::Inputs in1{q1.data(), k1.data(), v1.data(), g1.data(), b1.data(), nullptr, nullptr};
        if (auto st = recur::kda::decode(one, params, in1, state.data(), o1.data(), dv, nullptr, ws); !st) {
          std::fprintf(stderr, "recur decode: %s\n", st.error().message().c_str());
          return 2;
        }
        for (int64_t s = 0; s < c.batch; ++s)
          std::copy_n(o1.begin() + s * vv, vv, out.begin() + (s * c.tokens + t) * vv);
      }
      report(std::string("decode ") + std::string(recur::kda::decode_variant_name(dv)), out, state);
    }
  }
  std::printf("%s: %d mismatches (tolerance %.1e, relative to the largest magnitude)\n",
              failures ? "FAIL" : "PASS", failures, tol);
  return failures ? 1 : 0;
}
