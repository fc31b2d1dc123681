// The parts of the _recur extension module and what they share: errors become Python
// exceptions at this edge (recur.Error, a RuntimeError), never inside recur's libraries.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <span>
#include <string>
#include <utility>

#include "core/knobs.h"
#include "core/status.h"

namespace recur::py {

namespace pb = pybind11;

// Raises recur.Error with the error's message (its code name first).
[[noreturn]] void raise_error(const Error& error);

inline void check(const Status& status) {
  if (!status) raise_error(status.error());
}
template <typename T>
T value_or_raise(Result<T> result) {
  if (!result) raise_error(result.error());
  return std::move(*result);
}

// The bytes of a C-contiguous numpy array (writable unless `read_only_ok`); `what` names the
// argument in the ValueError.
inline std::span<std::byte> array_bytes(const pb::array& a, const char* what, bool read_only_ok = false) {
  if (!(a.flags() & pb::array::c_style)) throw pb::value_error(std::string(what) + ": expected a C-contiguous array");
  if (!read_only_ok && !a.writeable()) throw pb::value_error(std::string(what) + ": expected a writable array");
  auto* p = static_cast<std::byte*>(const_cast<void*>(a.data()));
  return {p, size_t(a.nbytes())};
}

// The knobs set through recur.set_knob (and RECUR_KNOBS at import); recur.load starts from them.
Config& global_knobs();
// Applies name=value to `config` (checked against the registry); python.release_gil also
// switches the bindings' GIL policy when `config` is the global one.
void set_knob_value(Config& config, const std::string& name, const std::string& value);

void bind_engine(pb::module_& m);
void bind_transfer(pb::module_& m);
void bind_trace(pb::module_& m);
void bind_testing(pb::module_& m);

}  // namespace recur::py
