// The _recur extension module: recur's engine, transfer engine and tracer for Python
// (python/recur/__init__.py is the public face; docs/python.md).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "bindings.h"
#include "gil_guard.h"
#include "trace/external_lock.h"

namespace recur::py {
namespace {
pb::object g_error_type;
}  // namespace

void raise_error(const Error& error) {
  PyErr_SetString(g_error_type.ptr(), error.to_string().c_str());
  throw pb::error_already_set();
}

Config& global_knobs() {
  static Config* config = new Config();  // never destroyed: read by threads until exit
  return *config;
}

void set_knob_value(Config& config, const std::string& name, const std::string& value) {
  check(config.set(name, value));
  if (&config == &global_knobs() && name == trace::kReleaseGilKnob) {
    set_release_gil(value_or_raise(config.get_bool(name)));
  }
}

}  // namespace recur::py

PYBIND11_MODULE(_recur, m) {
  namespace py = recur::py;
  m.doc() = "recur: engine, KV transfer engine and tracer (docs/python.md)";
  py::g_error_type = pybind11::reinterpret_borrow<pybind11::object>(
      PyErr_NewException("recur.Error", PyExc_RuntimeError, nullptr));
  m.attr("Error") = py::g_error_type;

  m.def("set_knob", [](const std::string& name, const std::string& value) {
    py::set_knob_value(py::global_knobs(), name, value);
  }, pybind11::arg("name"), pybind11::arg("value"),
     "Sets a registered knob for this process (recur.load starts from these; python.release_gil applies at once)");
  m.def("get_knob", [](const std::string& name) { return py::value_or_raise(py::global_knobs().get(name)); },
        pybind11::arg("name"), "The knob's value in this process (its default when unset)");
  m.def("knobs", [] {
    pybind11::list out;
    for (const recur::KnobSpec* k : recur::KnobRegistry::global().all()) {
      pybind11::dict d;
      d["name"] = k->name;
      d["type"] = std::string(recur::knob_type_name(k->type));
      d["default"] = k->default_value;
      d["value"] = py::value_or_raise(py::global_knobs().get(k->name));
      d["components"] = k->components;
      d["help"] = k->help;
      out.append(d);
    }
    return out;
  }, "Every registered knob: name, type, default, value, components, help");

  py::bind_engine(m);
  py::bind_transfer(m);
  py::bind_trace(m);
  py::bind_testing(m);
}
