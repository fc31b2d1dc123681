// recur's llama.cpp-parity arithmetic against libggml-cpu.so itself (issue #27): loads a llama.cpp
// CPU build's libggml-cpu.so with dlopen (a build outside this repository; nothing of ggml is
// compiled in) and compares, bit for bit,
//   - Q8_0 activations: recur's quantize_q8_0_rows against ggml's exported quantize_row_q8_0;
//   - Q8_0 dots: gemm_stored with kernel.gemm.q8_0_activations=q8_0_ggml against ggml's exported
//     ggml_vec_dot_q8_0_q8_0 (one token; for contrast, how many outputs the default q8_0 order
//     changes) and llamafile_sgemm (several tokens; called with c392e50's ggml_compute_params);
//   - the GELU table: engine.gelu=fp16_table's values for all 65,536 fp16 inputs against ggml's
//     ggml_table_gelu_f16, a local symbol found by the offsets the script reads with nm;
//   - every ggml_arith function (engine.ggml_arithmetic) against ggml's ops run as graphs through
//     ggml's public API from libggml-base.so next to it (ggml_arith_checks.h), for the ISA the
//     library was built for.
//
//   ggml_bits_check LIBGGML_CPU_SO [INIT_OFFSET GELU_TABLE_OFFSET]   (hex offsets of ggml_cpu_init
//   and ggml_table_gelu_f16 in the library; benchmarks/ggml_bits_check.sh passes them)
// Prints one line per check and exits 1 on any difference.
#include <dlfcn.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/convert.h"
#include "ggml_arith_checks.h"
#include "engine/blocks/block.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"

namespace {

using namespace recur;
using QuantizeRow = void (*)(const float* x, void* y, int64_t k);
using VecDot = void (*)(int n, float* s, size_t bs, const void* vx, size_t bx, const void* vy, size_t by, int nrc);
// llamafile's GEMM, what ggml runs for M >= 2 tokens; ggml_compute_params as c392e50 lays it out
// (ggml-cpu-impl.h): thread index and count, work buffer, thread pool.
struct ComputeParams {
  int ith = 0, nth = 1;
  size_t wsize = 0;
  void* wdata = nullptr;
  void* threadpool = nullptr;
};
using Sgemm = bool (*)(const ComputeParams* params, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                       const void* b, int64_t ldb, void* c, int64_t ldc, int atype, int btype, int ctype);
constexpr int kGgmlTypeF32 = 0, kGgmlTypeQ8_0 = 8;

// ggml's block_q8_0: an fp16 scale, then 32 int8.
constexpr size_t kBlockBytes = 34;

int check_quantize_and_dot(QuantizeRow quantize, VecDot dot, Sgemm sgemm) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t k = 4096, rows = 512, tokens = 4;
  std::vector<float> w(size_t(rows * k)), x(size_t(tokens * k));
  for (float& v : w) v = normal(rng) * 0.05f;
  for (size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) * (i % 97 == 0 ? 40.0f : 1.0f);  // uneven blocks
  // Weights through ggml's quantizer (the files' bytes: recur's writer gives the same).
  std::vector<std::byte> wq(size_t(rows) * size_t(k / 32) * kBlockBytes);
  for (int64_t r = 0; r < rows; ++r) quantize(w.data() + r * k, wq.data() + size_t(r) * size_t(k / 32) * kBlockBytes, k);
  // Activations: ggml's bytes against recur's.
  std::vector<std::byte> xg(size_t(tokens) * size_t(k / 32) * kBlockBytes);
  for (int64_t t = 0; t < tokens; ++t) quantize(x.data() + t * k, xg.data() + size_t(t) * size_t(k / 32) * kBlockBytes, k);
  std::vector<int8_t> q(x.size());
  std::vector<float> d(x.size() / 32);
  gemm::quantize_q8_0_rows(x.data(), tokens, k, q.data(), d.data());
  int64_t bytes_differ = 0;
  for (size_t b = 0; b < d.size(); ++b) {
    uint16_t h;
    std::memcpy(&h, xg.data() + b * kBlockBytes, 2);
    bytes_differ += fp32_to_fp16(d[b]) != h;
    bytes_differ += std::memcmp(q.data() + b * 32, xg.data() + b * kBlockBytes + 2, 32) != 0;
  }
  std::printf("quantize_row_q8_0:        %" PRId64 " of %zu blocks differ (scale or quants)\n", bytes_differ, d.size());
  // Dots: every (token, row) through ggml, and through recur's two orders.
  const gemm::WeightView view{.format = gemm::WeightFormat::kQ8_0, .n = rows, .k = k, .data = wq.data()};
  std::vector<float> mine(size_t(tokens * rows)), plain(mine.size());
  (void)gemm::gemm_stored(view, x.data(), tokens, mine.data(), nullptr, nullptr, gemm::Q8Activations::kQ8_0Ggml);
  (void)gemm::gemm_stored(view, x.data(), tokens, plain.data(), nullptr, nullptr, gemm::Q8Activations::kQ8_0);
  int64_t differ = 0, differ_plain = 0;
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      float s = 0;
      dot(int(k), &s, 0, wq.data() + size_t(r) * size_t(k / 32) * kBlockBytes, 0,
          xg.data() + size_t(t) * size_t(k / 32) * kBlockBytes, 0, 1);
      differ += std::memcmp(&s, &mine[size_t(t * rows + r)], 4) != 0;
      differ_plain += std::memcmp(&s, &plain[size_t(t * rows + r)], 4) != 0;
    }
  std::printf("ggml_vec_dot_q8_0_q8_0:   q8_0_ggml %" PRId64 " of %" PRId64 " outputs differ (default q8_0 order: %" PRId64 ")\n",
              differ, tokens * rows, differ_plain);
  int64_t differ_gemm = -1;
  if (sgemm != nullptr) {
    // C [tokens][rows] = A (weights, rows x k/32 blocks) against B (activations), one thread.
    std::vector<float> c(mine.size(), -1.0f);
    const ComputeParams params;
    if (sgemm(&params, rows, tokens, k / 32, wq.data(), k / 32, xg.data(), k / 32, c.data(), rows, kGgmlTypeQ8_0,
              kGgmlTypeQ8_0, kGgmlTypeF32)) {
      differ_gemm = 0;
      for (size_t i = 0; i < c.size(); ++i) differ_gemm += std::memcmp(&c[i], &mine[i], 4) != 0;
      std::printf("llamafile_sgemm (M = %" PRId64 "): q8_0_ggml %" PRId64 " of %zu outputs differ\n", tokens, differ_gemm,
                  c.size());
    } else {
      std::printf("llamafile_sgemm:          declined the Q8_0 shape (not checked)\n");
    }
  } else {
    std::printf("llamafile_sgemm:          not exported (not checked)\n");
  }
  return bytes_differ == 0 && differ == 0 && differ_gemm <= 0 ? 0 : 1;
}

// The ggml_arith checks, for the ISA the library was compiled for (ggml_cpu_has_avx512 answers at
// compile time).
int check_graphs(const std::string& bin_dir) {
  auto api = ggml_graph::load_api(bin_dir);
  if (!api) {
    std::fprintf(stderr, "%s\n", api.error().message().c_str());
    return 1;
  }
  if (api->cpu_has_avx512() == 0 && api->cpu_has_avx2() == 0) {
    std::printf("ggml build ISA:           neither avx512 nor avx2: the ggml_arith forms are not checked\n");
    return 0;
  }
  const auto isa = api->cpu_has_avx512() != 0 ? ggml_arith::GgmlIsa::kAvx512 : ggml_arith::GgmlIsa::kAvx2;
  const std::string name(enum_name(ggml_arith::kGgmlIsaNames, isa));
  std::printf("ggml build ISA:           %s (ggml_cpu_has_avx512 %d): ggml_arith's %s forms checked\n", name.c_str(),
              api->cpu_has_avx512(), name.c_str());
  std::mt19937_64 rng(27);
  bool ok = ggml_graph::check_rms_norm(*api, rng);
  ok = ggml_graph::check_rope(*api, rng) && ok;
  ok = ggml_graph::check_unary(*api, isa, rng) && ok;
  ok = ggml_graph::check_soft_max(*api, isa, rng) && ok;
  ok = ggml_graph::check_mul_mat(*api, isa, rng) && ok;
  ok = ggml_graph::check_attention(*api, isa, rng) && ok;
  return ok ? 0 : 1;
}

int check_gelu(void* init, uintptr_t init_offset, uintptr_t table_offset) {
  const auto* table = reinterpret_cast<const uint16_t*>(static_cast<const char*>(init) - init_offset + table_offset);
  int differ = 0, compared = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    const float x = fp16_to_fp32(uint16_t(i));
    if (x != x || x <= -10.0f || x >= 10.0f) continue;  // NaN; the tails ggml_vec_gelu_f32 does not read
    ++compared;
    differ += fp32_to_fp16(gelu_fp16_table(x)) != table[i];
  }
  std::printf("ggml_table_gelu_f16:      %d of %d entries differ\n", differ, compared);
  return differ == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 4) {
    std::fprintf(stderr, "usage: %s LIBGGML_CPU_SO [INIT_OFFSET GELU_TABLE_OFFSET]\n", argv[0]);
    return 2;
  }
  void* so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (so == nullptr) {
    std::fprintf(stderr, "%s: %s\n", argv[1], dlerror());
    return 2;
  }
  auto quantize = reinterpret_cast<QuantizeRow>(dlsym(so, "quantize_row_q8_0"));
  auto dot = reinterpret_cast<VecDot>(dlsym(so, "ggml_vec_dot_q8_0_q8_0"));
  void* init = dlsym(so, "ggml_cpu_init");
  if (quantize == nullptr || dot == nullptr || init == nullptr) {
    std::fprintf(stderr, "%s: no quantize_row_q8_0, ggml_vec_dot_q8_0_q8_0 or ggml_cpu_init exported\n", argv[1]);
    return 2;
  }
  // Fills ggml's fp16 tables: its fp16 -> fp32 conversion (the dot's block scales) and the GELU
  // table read from them.
  reinterpret_cast<void (*)()>(init)();
  int rc = check_quantize_and_dot(quantize, dot, reinterpret_cast<Sgemm>(dlsym(so, "llamafile_sgemm")));
  if (argc == 4) rc |= check_gelu(init, std::stoul(argv[2], nullptr, 16), std::stoul(argv[3], nullptr, 16));
  else std::printf("ggml_table_gelu_f16:      not checked (no symbol offsets given)\n");
  const std::string so_path = argv[1];
  const size_t slash = so_path.rfind('/');
  rc |= check_graphs(slash == std::string::npos ? "." : so_path.substr(0, slash));
  return rc;
}
