// `recur model inspect FILE`: what a GGUF model file holds (metadata, tensors), or why it is broken.
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "engine/gguf.h"

namespace recur::cli {
namespace {

using nlohmann::json;

constexpr size_t kMaxArrayItemsShown = 8;

json value_to_json(const gguf::Value& v, size_t max_items) {
  using gguf::ValueType;
  switch (v.type) {
    case ValueType::kString: return v.str;
    case ValueType::kBool: return v.boolean;
    case ValueType::kFloat32: case ValueType::kFloat64: return v.f64;
    case ValueType::kArray: {
      json items = json::array();
      for (size_t i = 0; i < v.items.size() && i < max_items; ++i) items.push_back(value_to_json(v.items[i], max_items));
      return {{"type", std::string(gguf::value_type_name(v.item_type))}, {"count", v.items.size()}, {"items", items}};
    }
    default:
      if (auto i = v.as_int()) return *i;
      return v.u64;
  }
}

struct InspectFlags {
  std::string path;
  bool json = false;
  bool all_items = false;
};

int run_inspect(const InspectFlags& flags) {
  auto file = gguf::read(flags.path);
  if (!file) return report_failure(file.error());
  size_t max_items = flags.all_items ? SIZE_MAX : kMaxArrayItemsShown;
  uint64_t total = 0;
  for (const auto& t : file->tensors) total += t.bytes;
  if (flags.json) {
    json meta = json::object();
    for (const auto& [k, v] : file->metadata) meta[k] = value_to_json(v, max_items);
    json tensors = json::array();
    for (const auto& t : file->tensors)
      tensors.push_back({{"name", t.name}, {"type", gguf::tensor_type_name(uint32_t(t.type))}, {"dims", t.dims},
                         {"bytes", t.bytes}, {"offset", file->data_offset + t.offset}});
    json out = {{"path", flags.path}, {"version", file->version}, {"alignment", file->alignment},
                {"tensor_bytes", total}, {"metadata", meta}, {"tensors", tensors}};
    std::puts(out.dump(2).c_str());
    return kExitOk;
  }
  fmt::print("{}: GGUF v{}, {} metadata keys, {} tensors, {:.1f} MiB of tensor data\n", flags.path, file->version,
             file->metadata.size(), file->tensors.size(), double(total) / (1 << 20));
  for (const auto& [k, v] : file->metadata) {
    std::string shown = value_to_json(v, max_items).dump();
    if (shown.size() > 100) shown = shown.substr(0, 97) + "...";
    fmt::print("  {:<40} {}\n", k, shown);
  }
  for (const auto& t : file->tensors)
    fmt::print("  {:<40} {:<5} [{}] {} bytes\n", t.name, gguf::tensor_type_name(uint32_t(t.type)), fmt::join(t.dims, ", "),
               t.bytes);
  return kExitOk;
}

void register_model(CLI::App& app, Invocation& inv) {
  auto* model = app.add_subcommand("model", "Model files: inspect GGUF files");
  model->require_subcommand(1);
  auto flags = std::make_shared<InspectFlags>();
  auto* inspect = model->add_subcommand("inspect", "Print a GGUF file's metadata and tensors, or the first problem found");
  inspect->add_option("FILE", flags->path, "GGUF model file")->required();
  inspect->add_flag("--json", flags->json, "Print a JSON object");
  inspect->add_flag("--all", flags->all_items, "Print every item of array metadata (default: the first 8)");
  inspect->callback([&inv, flags] { inv.run = [flags] { return run_inspect(*flags); }; });
}

}  // namespace

RECUR_CLI_COMMAND(model, register_model);

}  // namespace recur::cli
