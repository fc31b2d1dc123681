// recur.trace: zones, flows, instants, counters and thread names from Python, into the same
// per-thread buffers as the C++ code's, so Python threads are tracks of the same trace.
// The tracer keeps only pointers to names (trace.h); Python's strings are interned here for the
// life of the process.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "bindings.h"
#include "gil_guard.h"
#include "trace/trace.h"
#include "trace/trace_io.h"

namespace recur::py {
namespace {

class PyTraceStrings {
 public:
  const char* intern(const std::string& s) { return location(s)->name; }
  const trace::SourceLocation* location(const std::string& name) {
    std::lock_guard lock(mu_);
    auto it = locations_.find(name);
    if (it != locations_.end()) return &it->second;
    const char* stored = strings_.emplace_back(name).c_str();
    return &locations_.emplace(name, trace::SourceLocation{stored, "python", "", "", 0}).first->second;
  }
  static PyTraceStrings& global() {
    static PyTraceStrings* s = new PyTraceStrings();  // never destroyed: the tracer keeps pointers
    return *s;
  }

 private:
  std::mutex mu_;
  std::deque<std::string> strings_;
  std::unordered_map<std::string, trace::SourceLocation> locations_;
};

// `with recur.trace.zone("name", k=v):` — a zone on the calling thread, args as in RECUR_ZONE.
class PyZone {
 public:
  PyZone(std::string name, pb::dict args) : name_(std::move(name)), args_(std::move(args)) {}
  PyZone& enter() {
    name_python_thread_once();
    PyTraceStrings& strings = PyTraceStrings::global();
    zone_.emplace(strings.location(name_));
    for (auto [k, v] : args_) {
      const char* key = strings.intern(pb::str(k));
      if (pb::isinstance<pb::bool_>(v)) {
        zone_->arg(key, v.cast<bool>());
      } else if (pb::isinstance<pb::int_>(v)) {
        zone_->arg(key, v.cast<int64_t>());
      } else if (pb::isinstance<pb::float_>(v)) {
        zone_->arg(key, v.cast<double>());
      } else {
        zone_->arg(key, strings.intern(pb::str(v)));
      }
    }
    return *this;
  }
  void exit(const pb::args&) { zone_.reset(); }

 private:
  std::string name_;
  pb::dict args_;
  std::optional<trace::Zone> zone_;
};

const char* interned(const std::string& s) {
  name_python_thread_once();
  return PyTraceStrings::global().intern(s);
}

}  // namespace

void bind_trace(pb::module_& m) {
  pb::module_ t = m.def_submodule("trace", "recur's tracer (docs/trace.md, docs/python.md)");
  t.def("enable", [](bool on) { trace::set_enabled(on); }, pb::arg("on") = true, "Turns recording on (or off)");
  t.def("enabled", [] { return trace::enabled(); });
  t.def("reset", &reset_trace, "Empties every buffer (no thread may be recording)");
  t.def("set_thread_name", [](const std::string& name) { trace::set_thread_name(name); }, pb::arg("name"));
  pb::class_<PyZone>(t, "Zone", "A zone on the calling thread: use as a context manager")
      .def(pb::init<std::string, pb::dict>(), pb::arg("name"), pb::arg("args") = pb::dict())
      .def("__enter__", &PyZone::enter, pb::return_value_policy::reference)
      .def("__exit__", &PyZone::exit);
  t.def("instant", [](const std::string& name) { trace::instant(interned(name)); }, pb::arg("name"));
  t.def("counter", [](const std::string& name, double value) { trace::counter(interned(name), value); },
        pb::arg("name"), pb::arg("value"));
  t.def("flow_begin", [](const std::string& name, uint64_t id) { trace::flow_begin(interned(name), id); },
        pb::arg("name"), pb::arg("id"), "Flow `id` starts inside the current zone");
  t.def("flow_step", [](const std::string& name, uint64_t id) { trace::flow_step(interned(name), id); },
        pb::arg("name"), pb::arg("id"));
  t.def("flow_end", [](const std::string& name, uint64_t id) { trace::flow_end(interned(name), id); },
        pb::arg("name"), pb::arg("id"));
  t.def("save", [](const std::string& path) {
        trace::EventTable table = trace::capture();
        check(trace::write_trace(table, path));
        return table.size();
      }, pb::arg("path"), "Captures everything recorded so far into a trace file (.json, .json.gz, .pftrace); the event count");
}

}  // namespace recur::py
