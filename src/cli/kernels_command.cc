// `recur kernels`: the registered kernels, their shapes, tensors, partitioning and variants.
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "kernels/registry.h"

namespace recur::cli {
namespace {

nlohmann::json kernel_json(const kernels::KernelSpec& k) {
  nlohmann::json shape = nlohmann::json::array();
  for (const kernels::ShapeParam& p : k.shape_params)
    shape.push_back({{"name", p.name}, {"default", p.default_value}, {"min", p.min}, {"max", p.max}, {"help", p.help}});
  nlohmann::json variants = nlohmann::json::array();
  for (const kernels::VariantSpec& v : k.variants)
    variants.push_back({{"name", v.name}, {"isa", std::string(isa_name(v.isa))}, {"params", v.params}, {"help", v.help},
                        {"runnable", v.isa <= active_isa()}});
  return {{"name", k.name}, {"help", k.help}, {"shape", shape}, {"default_shape", k.default_shape().to_string()},
          {"tensors", k.describe_tensors(k.default_shape())},
          {"partitioning", k.partitioning ? nlohmann::json(k.partitioning->param) : nlohmann::json(nullptr)},
          {"variants", variants}, {"knob", fmt::format("kernel.{}.variant", k.name)}};
}

void register_kernels(CLI::App& app, Invocation& inv) {
  auto as_json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("kernels", "List registered kernels: shape parameters, tensors, partitioning, and "
                                            "variants with the ISA each needs (the subjects of recur bench and check)");
  cmd->add_flag("--json", *as_json, "Print a JSON array");
  cmd->callback([&inv, as_json] {
    inv.run = [as_json] {
      auto all = kernels::KernelRegistry::global().all();
      if (*as_json) {
        nlohmann::json out = nlohmann::json::array();
        for (const kernels::KernelSpec* k : all) out.push_back(kernel_json(*k));
        std::puts(out.dump(2).c_str());
        return kExitOk;
      }
      for (const kernels::KernelSpec* k : all) {
        fmt::print("{:<10} {}\n", k->name, k->help);
        fmt::print("{:<10} shape {} ({}); partitions over {}\n", "", k->default_shape().to_string(),
                   k->describe_tensors(k->default_shape()), k->partitioning ? k->partitioning->param : "nothing");
        for (const kernels::VariantSpec& v : k->variants)
          fmt::print("{:<10}   {:<10} {:<7}{} {}\n", "", v.name, isa_name(v.isa), v.isa <= active_isa() ? "" : " (not runnable here)",
                     v.help);
      }
      return kExitOk;
    };
  });
}

}  // namespace

RECUR_CLI_COMMAND(kernels, register_kernels);

}  // namespace recur::cli
