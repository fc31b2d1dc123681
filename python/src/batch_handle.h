// The Python objects of the engine bindings: a model with its pool and knobs, and sessions and
// batches that keep their model alive.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "core/knobs.h"
#include "core/thread_pool.h"
#include "engine/model.h"

namespace recur::py {

struct PyModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<ThreadPool> pool;
  Config knobs;
};

struct PySession {
  std::shared_ptr<PyModel> owner;
  std::unique_ptr<Session> session;
};

struct PyBatch {
  std::shared_ptr<PyModel> owner;
  std::unique_ptr<Batch> batch;
};

// Batch's state export/import and layer exporter (state_bindings.cc).
void bind_state(pybind11::module_& m, pybind11::class_<PyBatch>& batch);

}  // namespace recur::py
