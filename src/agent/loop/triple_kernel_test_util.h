// A kernel for loop tests, y = 3x over N floats against a float64 reference; the tests give its
// name and variants (loop_test: speeds, lookahead_test: errors).
#pragma once

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "kernels/registry.h"

namespace recur::agent {

inline kernels::KernelSpec triple_kernel(std::string name, std::vector<kernels::VariantSpec> variants) {
  kernels::KernelSpec k;
  k.name = std::move(name);
  k.help = "y = 3x (loop test)";
  k.shape_params = {{.name = "N", .default_value = 1 << 10, .max = 1 << 24, .help = "elements"}};
  auto n = [](const kernels::Shape& s) { return std::vector<int64_t>{s["N"]}; };
  k.inputs = {{.name = "x", .dtype = DType::kF32, .dims = n, .coords = {"i"}, .tile = {1024}}};
  k.outputs = {{.name = "y", .dtype = DType::kF32, .dims = n, .coords = {"i"}, .tile = {1024}}};
  k.reference = [](const kernels::Shape& s, std::span<const std::vector<double>> in, std::span<std::vector<double>> out,
                   std::span<std::vector<double>> mag) {
    for (int64_t i = 0; i < s["N"]; ++i) {
      out[0][size_t(i)] = 3.0 * in[0][size_t(i)];
      mag[0][size_t(i)] = std::fabs(out[0][size_t(i)]);
    }
  };
  k.cost.bytes = [](const kernels::Shape& s) { return 8.0 * double(s["N"]); };
  k.cost.flops = [](const kernels::Shape& s) { return double(s["N"]); };
  k.variants = std::move(variants);
  return k;
}

}  // namespace recur::agent
