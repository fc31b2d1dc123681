// Sequence state for disaggregated prefill (engine/sequence_state.h): export a sequence's layer
// state into numpy memory, import it into another batch, and Batch.layer_exporter(), which
// exports each layer of watched sequences from the engine's layer hook while forward() runs and
// queues (seq, layer, bytes) for a Python KV-transfer thread (recur/prefill_server.py).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "batch_handle.h"
#include "bindings.h"
#include "engine/sequence_state.h"
#include "gil_guard.h"

namespace recur::py {
namespace {

// Filled on the forward's thread (the layer hook), drained by pop() on another.
class LayerExporter {
 public:
  explicit LayerExporter(Batch& batch) : batch_(batch) {
    batch_.set_layer_hook([this](int layer) { export_layer(layer); });
  }
  ~LayerExporter() { batch_.set_layer_hook(nullptr); }

  // Layer l of `seq` goes to staging[l * slot_bytes, ...) after each forward's layer l.
  void watch(SeqId seq, const pb::array& staging, size_t slot_bytes) {
    std::span<std::byte> s = array_bytes(staging, "layer_exporter.watch staging");
    std::lock_guard lock(mu_);
    watched_[seq] = Target{s, slot_bytes, staging};
  }
  void unwatch(SeqId seq) {
    std::lock_guard lock(mu_);
    watched_.erase(seq);
  }
  struct Popped {
    std::optional<std::tuple<SeqId, int, size_t>> item;
    std::optional<Error> error;  // the hook's first error, reported once
  };
  // The next exported (seq, layer, bytes), or nothing after timeout_ms. No Python: runs with
  // the GIL released.
  Popped pop(int timeout_ms) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return !ready_.empty() || error_; });
    Popped p;
    if (error_) {
      p.error = std::move(error_);
      error_.reset();
    } else if (!ready_.empty()) {
      p.item = ready_.front();
      ready_.pop_front();
    }
    return p;
  }

 private:
  struct Target {
    std::span<std::byte> staging;
    size_t slot_bytes = 0;
    pb::object keep;  // touched only with the GIL (watch/unwatch)
  };

  void export_layer(int layer) {
    std::lock_guard lock(mu_);
    for (auto& [seq, t] : watched_) {
      Status s = export_one(seq, layer, t);
      if (!s && !error_) error_ = s.error();
    }
    cv_.notify_all();
  }
  Status export_one(SeqId seq, int layer, const Target& t) {
    RECUR_ASSIGN_OR_RETURN(size_t bytes, layer_state_bytes(batch_, seq, layer));
    size_t offset = size_t(layer) * t.slot_bytes;
    if (bytes > t.slot_bytes || offset + t.slot_bytes > t.staging.size()) {
      return invalid_argument("layer exporter: sequence {} layer {}: {} state bytes, staging slots of {} bytes ({} in all)",
                              seq, layer, bytes, t.slot_bytes, t.staging.size());
    }
    RECUR_RETURN_IF_ERROR(export_layer_state(batch_, seq, layer, t.staging.subspan(offset, bytes)));
    ready_.emplace_back(seq, layer, bytes);
    return {};
  }

  Batch& batch_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<SeqId, Target> watched_;
  std::deque<std::tuple<SeqId, int, size_t>> ready_;
  std::optional<Error> error_;
};

}  // namespace

void bind_state(pb::module_& m, pb::class_<PyBatch>& batch) {
  batch.def("layer_state_bytes", [](PyBatch& b, SeqId seq, int layer, int tokens) {
         return value_or_raise(layer_state_bytes(*b.batch, seq, layer, tokens));
       }, pb::arg("seq"), pb::arg("layer"), pb::arg("tokens") = -1,
       "Bytes of the layer's state now, or once the sequence holds `tokens` tokens")
      .def("export_layer_state", [](PyBatch& b, SeqId seq, int layer, const pb::array& out) {
         check(export_layer_state(*b.batch, seq, layer, array_bytes(out, "export_layer_state out")));
       }, pb::arg("seq"), pb::arg("layer"), pb::arg("out"))
      .def("import_layer_state", [](PyBatch& b, SeqId seq, int layer, const pb::array& in) {
         check(import_layer_state(*b.batch, seq, layer, array_bytes(in, "import_layer_state state", true)));
       }, pb::arg("seq"), pb::arg("layer"), pb::arg("state"))
      .def("set_sequence_position", [](PyBatch& b, SeqId seq, int position) {
         check(set_sequence_position(*b.batch, seq, position));
       }, pb::arg("seq"), pb::arg("position"))
      .def("layer_exporter", [](PyBatch& b) { return std::make_unique<LayerExporter>(*b.batch); },
           pb::keep_alive<0, 1>(), "Exports watched sequences' layers from inside forward() (one exporter per batch)");

  pb::class_<LayerExporter>(m, "LayerExporter", "Each forward layer's state of watched sequences, queued for a transfer thread")
      .def("watch", &LayerExporter::watch, pb::arg("seq"), pb::arg("staging"), pb::arg("slot_bytes"))
      .def("unwatch", &LayerExporter::unwatch, pb::arg("seq"))
      .def("pop", [](LayerExporter& e, int timeout_ms) {
         RECUR_PY_ZONE_LOC(loc, "py.layer_wait");
         LayerExporter::Popped p = run_cpp(&loc, GilPolicy::kWait, [&] { return e.pop(timeout_ms); });
         if (p.error) raise_error(*p.error);
         return p.item;
       }, pb::arg("timeout_ms") = 100, "(seq, layer, bytes) of the next exported layer, or None after timeout_ms");
}

}  // namespace recur::py
