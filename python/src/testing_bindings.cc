// recur._testing: C++ calls of known length for the GIL tests (python/tests/test_gil.py):
// busy() computes (holds the GIL when python.release_gil is off), wait() blocks (releases it).
#include <pybind11/pybind11.h>

#include <chrono>
#include <thread>

#include "bindings.h"
#include "gil_guard.h"

namespace recur::py {

void bind_testing(pb::module_& m) {
  pb::module_ t = m.def_submodule("_testing", "C++ calls of known length for tests");
  t.def("busy", [](double ms) {
    RECUR_PY_ZONE_LOC(loc, "py.busy");
    return run_cpp(&loc, GilPolicy::kCompute, [ms] {
      auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(ms);
      uint64_t spins = 0;
      while (std::chrono::steady_clock::now() < end) ++spins;
      return spins;
    });
  }, pb::arg("ms"), "Spins for ms milliseconds as a compute call");
  t.def("wait", [](double ms) {
    RECUR_PY_ZONE_LOC(loc, "py.wait");
    return run_cpp(&loc, GilPolicy::kWait, [ms] {
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
      return true;
    });
  }, pb::arg("ms"), "Sleeps for ms milliseconds as a blocking wait");
}

}  // namespace recur::py
