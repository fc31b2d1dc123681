// Shared pieces of the probe verbs (`recur bench`, `recur check`, `recur kernels`): resolving
// kernel, variant and shape names with errors that list what exists, parsing comma lists, and
// printing a Feedback record as JSON or as one screen of text. Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/feedback.h"
#include "core/status.h"
#include "kernels/registry.h"

namespace recur::probe {

struct KernelTarget {
  const kernels::KernelSpec* spec = nullptr;
  const kernels::VariantSpec* variant = nullptr;
  const kernels::VariantSpec* vs = nullptr;  // null when not asked for
  kernels::Shape shape;
};

// Looks up the kernel, the variant (empty: the kernel.<name>.variant knob value, "auto" = best
// runnable), the optional --vs variant and the shape (empty: defaults).
Result<KernelTarget> resolve_kernel_target(const kernels::KernelRegistry& registry, std::string_view kernel,
                                           std::string_view variant, std::string_view vs, std::string_view shape,
                                           std::string_view knob_value);

// "1,2,4,8" -> {1, 2, 4, 8}; errors name the item.
Result<std::vector<int64_t>> parse_int_list(std::string_view text, std::string_view what);
// Splits on ASCII whitespace ("--vs-cmd 'sleep 0.01'").
std::vector<std::string> split_words(std::string_view text);

// Prints the record (JSON with json=true, else render_feedback()) to stdout.
void print_feedback(const Feedback& f, bool json);

}  // namespace recur::probe
