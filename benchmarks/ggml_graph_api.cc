// ggml_graph_api.h: resolving ggml's graph API from a llama.cpp build with dlopen/dlsym.
#include "ggml_graph_api.h"

#include <dlfcn.h>

#include <cstring>

namespace recur::ggml_graph {

namespace {

// Resolves `name` in `so` into `fn` (a function pointer of the declared type).
template <class Fn>
Status resolve(void* so, const std::string& lib, const char* name, Fn* fn) {
  void* sym = dlsym(so, name);
  if (sym == nullptr) return not_found("{}: no exported symbol {} (not a llama.cpp c392e50-era ggml build?)", lib, name);
  *fn = reinterpret_cast<Fn>(sym);
  return {};
}

Result<void*> open(const std::string& path) {
  void* so = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (so == nullptr) return not_found("{}: {}", path, dlerror());
  return so;
}

}  // namespace

Result<Api> load_api(const std::string& bin_dir) {
  const std::string base_lib = bin_dir + "/libggml-base.so", cpu_lib = bin_dir + "/libggml-cpu.so";
  RECUR_ASSIGN_OR_RETURN(void* base, open(base_lib));
  RECUR_ASSIGN_OR_RETURN(void* cpu, open(cpu_lib));
  Api a{};
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_init", &a.init));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_free", &a.free));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_new_tensor_1d", &a.new_tensor_1d));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_new_tensor_2d", &a.new_tensor_2d));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_new_tensor_3d", &a.new_tensor_3d));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_new_tensor_4d", &a.new_tensor_4d));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_get_data", &a.get_data));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_row_size", &a.row_size));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_rms_norm", &a.rms_norm));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_mul", &a.mul));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_rope_ext", &a.rope_ext));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_silu", &a.silu));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_sigmoid", &a.sigmoid));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_tanh", &a.tanh));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_soft_max", &a.soft_max));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_soft_max_ext", &a.soft_max_ext));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_mul_mat", &a.mul_mat));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_scale", &a.scale));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_view_3d", &a.view_3d));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_permute", &a.permute));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_new_graph", &a.new_graph));
  RECUR_RETURN_IF_ERROR(resolve(base, base_lib, "ggml_build_forward_expand", &a.build_forward_expand));
  RECUR_RETURN_IF_ERROR(resolve(cpu, cpu_lib, "ggml_cpu_init", &a.cpu_init));
  RECUR_RETURN_IF_ERROR(resolve(cpu, cpu_lib, "ggml_graph_compute_with_ctx", &a.graph_compute_with_ctx));
  RECUR_RETURN_IF_ERROR(resolve(cpu, cpu_lib, "ggml_cpu_has_avx512", &a.cpu_has_avx512));
  RECUR_RETURN_IF_ERROR(resolve(cpu, cpu_lib, "ggml_cpu_has_avx2", &a.cpu_has_avx2));
  a.cpu_init();  // ggml's fp16 tables (conversions, the GELU table)
  return a;
}

Scratch::Scratch(const Api& api, size_t bytes)
    : api_(api), ctx_(api.init(InitParams{.mem_size = bytes, .mem_buffer = nullptr, .no_alloc = false})) {}

Scratch::~Scratch() {
  if (ctx_ != nullptr) api_.free(ctx_);
}

Tensor* Scratch::tensor(Type type, std::initializer_list<int64_t> ne, const void* data) {
  const int64_t* d = ne.begin();
  Tensor* t = nullptr;
  switch (ne.size()) {
    case 1: t = api_.new_tensor_1d(ctx_, type, d[0]); break;
    case 2: t = api_.new_tensor_2d(ctx_, type, d[0], d[1]); break;
    case 3: t = api_.new_tensor_3d(ctx_, type, d[0], d[1], d[2]); break;
    default: t = api_.new_tensor_4d(ctx_, type, d[0], d[1], d[2], d[3]); break;
  }
  if (data != nullptr) {
    size_t bytes = api_.row_size(type, d[0]);
    for (size_t i = 1; i < ne.size(); ++i) bytes *= size_t(d[i]);
    std::memcpy(api_.get_data(t), data, bytes);
  }
  return t;
}

std::vector<float> Scratch::compute(Tensor* out, int64_t count, int n_threads) {
  Graph* graph = api_.new_graph(ctx_);
  api_.build_forward_expand(graph, out);
  if (api_.graph_compute_with_ctx(ctx_, graph, n_threads) != 0) return {};
  const auto* p = static_cast<const float*>(api_.get_data(out));
  return std::vector<float>(p, p + count);
}

}  // namespace recur::ggml_graph
