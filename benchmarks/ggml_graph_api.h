// The few functions of ggml's public graph API (ggml.h and ggml-cpu.h as llama.cpp c392e50 declares
// them) that benchmarks/ggml_bits_check needs to run ggml's own ops on its own CPU backend: declared
// here from the documented signatures and resolved with dlsym from a llama.cpp build's
// libggml-base.so and libggml-cpu.so at run time. Nothing of ggml is compiled in; its structs stay
// opaque (tensor data only through ggml_get_data).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/status.h"

namespace recur::ggml_graph {

// Opaque: ggml_context, ggml_tensor, ggml_cgraph.
struct Context;
struct Tensor;
struct Graph;

// enum ggml_type's values for the types used here.
enum class Type : int { kF32 = 0, kF16 = 1, kI32 = 26 };
// ggml_rope_ext's mode: GGML_ROPE_TYPE_NEOX, else the normal (adjacent pairs) rotation.
inline constexpr int kRopeNorm = 0;
inline constexpr int kRopeNeox = 2;

// struct ggml_init_params (passed by value).
struct InitParams {
  size_t mem_size;
  void* mem_buffer;
  bool no_alloc;
};

struct Api {
  // libggml-base.so
  Context* (*init)(InitParams);
  void (*free)(Context*);
  Tensor* (*new_tensor_1d)(Context*, Type, int64_t);
  Tensor* (*new_tensor_2d)(Context*, Type, int64_t, int64_t);
  Tensor* (*new_tensor_3d)(Context*, Type, int64_t, int64_t, int64_t);
  Tensor* (*new_tensor_4d)(Context*, Type, int64_t, int64_t, int64_t, int64_t);
  void* (*get_data)(const Tensor*);
  size_t (*row_size)(Type, int64_t);
  Tensor* (*rms_norm)(Context*, Tensor*, float eps);
  Tensor* (*mul)(Context*, Tensor*, Tensor*);
  // a, positions (I32), freq_factors (may be null), n_dims, mode, n_ctx_orig, freq_base,
  // freq_scale, ext_factor, attn_factor, beta_fast, beta_slow
  Tensor* (*rope_ext)(Context*, Tensor*, Tensor*, Tensor*, int, int, int, float, float, float, float, float, float);
  Tensor* (*silu)(Context*, Tensor*);
  Tensor* (*sigmoid)(Context*, Tensor*);
  Tensor* (*tanh)(Context*, Tensor*);
  Tensor* (*soft_max)(Context*, Tensor*);
  Tensor* (*soft_max_ext)(Context*, Tensor*, Tensor* mask, float scale, float max_bias);
  Tensor* (*mul_mat)(Context*, Tensor*, Tensor*);
  Tensor* (*scale)(Context*, Tensor*, float);
  Tensor* (*view_3d)(Context*, Tensor*, int64_t, int64_t, int64_t, size_t nb1, size_t nb2, size_t offset);
  Tensor* (*permute)(Context*, Tensor*, int, int, int, int);
  Graph* (*new_graph)(Context*);
  void (*build_forward_expand)(Graph*, Tensor*);
  // libggml-cpu.so
  void (*cpu_init)();
  int (*graph_compute_with_ctx)(Context*, Graph*, int n_threads);  // enum ggml_status: 0 is success
  int (*cpu_has_avx512)();  // compile-time answers: the ISA the library was built for
  int (*cpu_has_avx2)();
};

// dlopens bin_dir/libggml-base.so and bin_dir/libggml-cpu.so (kept loaded) and resolves every
// function above; an error names the library and the missing symbol.
Result<Api> load_api(const std::string& bin_dir);

// One ggml context with its memory, freed on scope exit; tensors are created with their data.
class Scratch {
 public:
  Scratch(const Api& api, size_t bytes);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  Context* ctx() const { return ctx_; }
  // A new tensor of shape ne (ne[0] first) holding `data` (ggml_nbytes bytes; null leaves it unset).
  Tensor* tensor(Type type, std::initializer_list<int64_t> ne, const void* data);
  // Builds the graph of `out`, computes it on n_threads and returns its first `count` floats
  // (out must be a contiguous F32 tensor); an empty vector when ggml reports a failure.
  std::vector<float> compute(Tensor* out, int64_t count, int n_threads);

 private:
  const Api& api_;
  Context* ctx_;
};

}  // namespace recur::ggml_graph
