// What HTA reads from an event's name and category: the kernel class (communication, memory,
// computation, other), ProfilerStep markers, the runtime calls that launch GPU work, and the
// categories its idle-time analysis counts as kernels. Plain functions of the text; thread-safe.
//
// HTA matches Python regular expressions with re.match (anchored at the start; '.' stops at a
// newline). These are the same tests written out by hand (docs/analyses.md, "## hta"):
//   communication  starts with nccl, hip or hccl, or "ncclKernel" on the first line;
//   memory         starts with Memcpy, hipMemcpy, Memset, hipMemset or dma;
//   computation    none of the above and not a runtime/sync/launch name (HTA's inverse list);
//   other          the rest (e.g. "Event Sync", "cudaStreamSynchronize").
#pragma once

#include <cstdint>
#include <string_view>

namespace recur::analyze {

enum class HtaKernelType : uint8_t { kComputation = 0, kCommunication = 1, kMemory = 2, kOther = 3 };

// "COMPUTATION", "COMMUNICATION", "MEMORY", "OTHER" (HTA's labels).
std::string_view hta_kernel_type_name(HtaKernelType t);

// HTA's kernel class for a GPU event named `name` (checked in HTA's order: communication,
// memory, computation).
HtaKernelType hta_kernel_type(std::string_view name);

// "ProfilerStep#<digits>..." (HTA's ^ProfilerStep#(\d+)).
bool is_hta_profiler_step(std::string_view name);

// Runtime calls HTA's launch statistics pair with their kernels: cudaLaunchKernel,
// cudaLaunchKernelExC, MTIA's runFunction, cudaMemcpyAsync and cudaMemsetAsync.
bool is_hta_launch_stats_call(std::string_view name);

// Runtime calls that enqueue GPU work for HTA's queue length (CUDA, HIP and MTIA launches,
// memcpy and memset).
bool is_hta_queue_launch_call(std::string_view name);

// Device-wide synchronisation events HTA counts as GPU events ("Event Sync", "Context Sync").
bool is_hta_device_sync(std::string_view name);

// Categories HTA's idle-time breakdown counts as kernels (kernel, gpu_memcpy, gpu_memset, ...).
bool is_hta_kernel_category(std::string_view cat);

}  // namespace recur::analyze
