#include "analyze/hta_names.h"

#include <array>

namespace recur::analyze {
namespace {

// HTA's patterns use '.', which does not cross a newline: "contains" means on the first line.
std::string_view first_line(std::string_view s) { return s.substr(0, s.find('\n')); }

bool starts_with_any(std::string_view s, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes) {
    if (s.starts_with(p)) return true;
  }
  return false;
}

bool is_communication(std::string_view name) {
  return starts_with_any(name, {"nccl", "hip", "hccl"}) ||
         first_line(name).find("ncclKernel") != std::string_view::npos;
}

bool is_memory(std::string_view name) {
  return starts_with_any(name, {"Memcpy", "hipMemcpy", "Memset", "hipMemset", "dma"});
}

// HTA's computation pattern is an inverse match: a name is computation unless it looks like a
// collective, a copy, a runtime call or a synchronisation.
bool is_computation(std::string_view name) {
  if (starts_with_any(name, {"nccl", "Stream Wait Event", "runFunction", "hip", "job_exe", "packet",
                             "pe_exe", "cpum_exe_subgraph", "hccl", "collective_subgraph_execution"})) {
    return false;
  }
  std::string_view line = first_line(name);
  for (std::string_view part : {"Memcpy", "Memset", "dma", "Sync"}) {
    if (line.find(part) != std::string_view::npos) return false;
  }
  // cuda.*LaunchKernel, anchored at the start.
  if (line.starts_with("cuda") && line.find("LaunchKernel", 4) != std::string_view::npos) return false;
  return true;
}

template <size_t N>
bool is_one_of(std::string_view s, const std::array<std::string_view, N>& names) {
  for (std::string_view n : names) {
    if (s == n) return true;
  }
  return false;
}

constexpr std::string_view kMtiaLaunch = "runFunction - job_prep_and_submit_for_execution";

}  // namespace

std::string_view hta_kernel_type_name(HtaKernelType t) {
  switch (t) {
    case HtaKernelType::kComputation: return "COMPUTATION";
    case HtaKernelType::kCommunication: return "COMMUNICATION";
    case HtaKernelType::kMemory: return "MEMORY";
    case HtaKernelType::kOther: break;
  }
  return "OTHER";
}

HtaKernelType hta_kernel_type(std::string_view name) {
  if (is_communication(name)) return HtaKernelType::kCommunication;
  if (is_memory(name)) return HtaKernelType::kMemory;
  if (is_computation(name)) return HtaKernelType::kComputation;
  return HtaKernelType::kOther;
}

bool is_hta_profiler_step(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  return name.starts_with(kPrefix) && name.size() > kPrefix.size() && name[kPrefix.size()] >= '0' &&
         name[kPrefix.size()] <= '9';
}

bool is_hta_launch_stats_call(std::string_view name) {
  static constexpr std::array<std::string_view, 5> kNames = {
      "cudaLaunchKernel", "cudaLaunchKernelExC", kMtiaLaunch, "cudaMemsetAsync", "cudaMemcpyAsync"};
  return is_one_of(name, kNames);
}

bool is_hta_queue_launch_call(std::string_view name) {
  static constexpr std::array<std::string_view, 12> kNames = {
      "cudaMemsetAsync",  "cudaMemcpyAsync",          "cudaLaunchKernel", "cudaLaunchKernelExC",
      "cuLaunchKernel",   kMtiaLaunch,                "hipLaunchKernel",  "hipExtModuleLaunchKernel",
      "hipMemcpyAsync",   "hipMemsetAsync",           "hipMemcpyWithStream", "cuLaunchKernelEx"};
  return is_one_of(name, kNames);
}

bool is_hta_device_sync(std::string_view name) { return name == "Event Sync" || name == "Context Sync"; }

bool is_hta_kernel_category(std::string_view cat) {
  static constexpr std::array<std::string_view, 7> kCats = {
      "kernel", "Kernel", "gpu_memset", "Memset", "gpu_memcpy", "Memcpy", "mtia_ccp_events"};
  return is_one_of(cat, kCats);
}

}  // namespace recur::analyze
