// recur.TransferEngine, recur.KvSender / KvReceiver: the transfer engine with numpy arrays as
// memory. Registered arrays are kept alive by the engine until unregistered; waits release the
// GIL (run_cpp, GilPolicy::kWait).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "gil_guard.h"
#include "transfer/kv_transfer.h"
#include "transfer/transfer_engine.h"

namespace recur::py {
namespace {

using transfer::KvLayout;
using transfer::KvPage;
using transfer::KvPageOut;
using transfer::KvReceiver;
using transfer::KvSender;
using transfer::RegionInfo;
using transfer::SegmentHandle;
using transfer::TransferEngine;
using transfer::TransferOpcode;
using transfer::TransferRequest;
using transfer::TransferState;
using transfer::TransferStatus;
using BatchId = transfer::BatchId;
using std::chrono::milliseconds;

struct PyTransferEngine {
  std::unique_ptr<TransferEngine> engine;
  std::map<const void*, pb::object> registered;  // arrays kept alive while registered
  // allocate_shared's memory [begin, end): it lives as long as the engine, so registering it keeps
  // no reference (its array's base is the engine: a reference back would be a cycle Python cannot
  // collect, and the engine, its shared-memory objects included, would never be destroyed).
  std::vector<std::pair<const std::byte*, const std::byte*>> own;
  bool owns(const std::byte* p) const {
    for (const auto& [b, e] : own)
      if (p >= b && p < e) return true;
    return false;
  }
};

pb::dict region_dict(const RegionInfo& r) {
  pb::dict d;
  d["id"] = r.id;
  d["segment_offset"] = r.segment_offset;
  d["length"] = r.length;
  d["shared"] = r.shared;
  return d;
}

TransferOpcode opcode_of(const std::string& op) {
  if (op == "write") return TransferOpcode::kWrite;
  if (op == "read") return TransferOpcode::kRead;
  if (op == "store_flag") return TransferOpcode::kStoreFlag;
  throw pb::value_error("transfer request: op '" + op + "', expected write, read or store_flag");
}

// {"op", "source" (array), "source_offset", "target", "target_offset", "length"} -> a request.
TransferRequest request_of(const pb::dict& d, size_t index) {
  auto field = [&](const char* key) -> pb::object {
    if (!d.contains(key)) throw pb::key_error("transfer request " + std::to_string(index) + ": missing '" + key + "'");
    return d[key];
  };
  std::span<std::byte> src = array_bytes(field("source").cast<pb::array>(), "transfer request source");
  uint64_t src_offset = d.contains("source_offset") ? d["source_offset"].cast<uint64_t>() : 0;
  uint64_t length = d.contains("length") ? d["length"].cast<uint64_t>() : src.size() - std::min<uint64_t>(src_offset, src.size());
  if (src_offset + length > src.size()) {
    throw pb::value_error("transfer request " + std::to_string(index) + ": source_offset + length past the source array");
  }
  TransferRequest r;
  r.opcode = opcode_of(d.contains("op") ? d["op"].cast<std::string>() : "write");
  r.source = src.data() + src_offset;
  r.target = field("target").cast<SegmentHandle>();
  r.target_offset = field("target_offset").cast<uint64_t>();
  r.length = length;
  return r;
}

void submit_requests(PyTransferEngine& e, BatchId batch, const pb::list& requests) {
  std::vector<TransferRequest> reqs;
  for (size_t i = 0; i < requests.size(); ++i) reqs.push_back(request_of(requests[i].cast<pb::dict>(), i));
  check(e.engine->submit(batch, reqs));
}

pb::dict status_dict(const TransferStatus& s) {
  pb::dict d;
  d["state"] = s.state == TransferState::kPending ? "pending" : s.state == TransferState::kCompleted ? "completed" : "failed";
  d["bytes"] = s.bytes;
  d["error"] = s.error;
  return d;
}

std::vector<KvPage> pages_of(const pb::list& pages) {
  std::vector<KvPage> out;
  for (size_t i = 0; i < pages.size(); ++i) {
    std::span<std::byte> b = array_bytes(pages[i].cast<pb::array>(), "KV page", true);
    out.push_back({b.data(), b.size()});
  }
  return out;
}

struct PyKvSender {
  std::shared_ptr<PyTransferEngine> owner;
  std::unique_ptr<KvSender> sender;
};

struct PyKvReceiver {
  pb::object area;  // kept alive
  std::unique_ptr<KvReceiver> receiver;
};

}  // namespace

void bind_transfer(pb::module_& m) {
  pb::class_<PyTransferEngine, std::shared_ptr<PyTransferEngine>>(m, "TransferEngine",
                                                                  "Batches of reads and writes to peers' registered memory (shm or TCP)")
      .def(pb::init([](const std::string& segment_name, const std::string& listen, int timeout_ms,
                       std::optional<double> link_mbps) {
             // The emulated link: the keyword, else the knob transfer.link_mbps (recur.set_knob, RECUR_KNOBS).
             if (link_mbps && !(*link_mbps >= 0))
               throw pb::value_error("TransferEngine: link_mbps " + std::to_string(*link_mbps) +
                                     ", expected >= 0 (MB/s; 0 = unlimited)");
             double link = link_mbps ? *link_mbps * 1e6 : value_or_raise(transfer::link_bytes_per_s(global_knobs()));
             auto e = std::make_shared<PyTransferEngine>();
             e->engine = value_or_raise(TransferEngine::create({.segment_name = segment_name, .listen = listen,
                                                                .timeout = milliseconds(timeout_ms),
                                                                .link_bytes_per_s = link}));
             return e;
           }), pb::arg("segment_name"), pb::arg("listen") = "", pb::arg("timeout_ms") = 5000,
           pb::arg("link_mbps") = pb::none(),
           "link_mbps: emulated link bandwidth in MB/s (10^6 bytes; 0 = unlimited); default: the knob transfer.link_mbps")
      .def_property_readonly("segment_name", [](const PyTransferEngine& e) { return e.engine->segment_name(); })
      .def_property_readonly("port", [](const PyTransferEngine& e) { return e.engine->port(); })
      .def("allocate_shared", [](const std::shared_ptr<PyTransferEngine>& e, size_t bytes) {
             void* p = value_or_raise(e->engine->allocate_shared(bytes));
             e->own.emplace_back(static_cast<const std::byte*>(p), static_cast<const std::byte*>(p) + bytes);
             // The array's base is the engine: the memory lives as long as both.
             return pb::array(pb::dtype::of<uint8_t>(), {bytes}, {size_t(1)}, p, pb::cast(e));
           }, pb::arg("bytes"), "Zeroed shared memory as a uint8 array (peers on this host can map it once registered)")
      .def("register_memory", [](PyTransferEngine& e, const pb::array& a, const std::string& location) {
             std::span<std::byte> b = array_bytes(a, "register_memory");
             RegionInfo r = value_or_raise(e.engine->register_memory(b.data(), b.size(), location));
             if (!e.owns(b.data())) e.registered[b.data()] = a;
             return region_dict(r);
           }, pb::arg("array"), pb::arg("location") = "cpu:0", "Makes the array's memory a region of this segment")
      .def("unregister_memory", [](PyTransferEngine& e, const pb::array& a) {
             const void* p = a.data();
             check(e.engine->unregister_memory(const_cast<void*>(p)));
             e.registered.erase(p);
           }, pb::arg("array"))
      .def("regions", [](const PyTransferEngine& e) {
             pb::list out;
             for (const RegionInfo& r : e.engine->regions()) out.append(region_dict(r));
             return out;
           })
      .def("open_segment", [](PyTransferEngine& e, const std::string& name) {
             return value_or_raise(e.engine->open_segment(name));
           }, pb::arg("name"), "A peer's segment: 'name' (shared memory) or 'host:port/name' (TCP)")
      .def("segment_regions", [](PyTransferEngine& e, SegmentHandle s) {
             pb::list out;
             for (const RegionInfo& r : value_or_raise(e.engine->segment_regions(s))) out.append(region_dict(r));
             return out;
           }, pb::arg("segment"))
      .def("close_segment", [](PyTransferEngine& e, SegmentHandle s) { check(e.engine->close_segment(s)); },
           pb::arg("segment"))
      .def("allocate_batch", [](PyTransferEngine& e, size_t n) { return value_or_raise(e.engine->allocate_batch(n)); },
           pb::arg("max_requests"))
      .def("submit", &submit_requests, pb::arg("batch"), pb::arg("requests"),
           "Queues requests: dicts of op (write|read|store_flag), source (registered array), source_offset, "
           "target (segment), target_offset, length")
      .def("status", [](const PyTransferEngine& e, BatchId b, size_t i) {
             return status_dict(value_or_raise(e.engine->status(b, i)));
           }, pb::arg("batch"), pb::arg("index"))
      .def("wait_batch", [](const PyTransferEngine& e, BatchId b, int timeout_ms) {
             RECUR_PY_ZONE_LOC(loc, "py.transfer_wait");
             check(run_cpp(&loc, GilPolicy::kWait, [&] { return e.engine->wait_batch(b, milliseconds(timeout_ms)); }));
           }, pb::arg("batch"), pb::arg("timeout_ms") = 5000, "Waits for every request of the batch (GIL released)")
      .def("free_batch", [](PyTransferEngine& e, BatchId b) { check(e.engine->free_batch(b)); }, pb::arg("batch"));

  pb::class_<KvLayout>(m, "KvLayout", "Receive-area layout: one slot per (layer, block)")
      .def(pb::init([](int layers, int blocks_per_layer, size_t max_block_bytes) {
             KvLayout l{.layers = layers, .blocks_per_layer = blocks_per_layer, .max_block_bytes = max_block_bytes};
             check(l.check());
             return l;
           }), pb::arg("layers"), pb::arg("blocks_per_layer"), pb::arg("max_block_bytes"))
      .def_readonly("layers", &KvLayout::layers)
      .def_readonly("blocks_per_layer", &KvLayout::blocks_per_layer)
      .def_readonly("max_block_bytes", &KvLayout::max_block_bytes)
      .def_property_readonly("slot_bytes", &KvLayout::slot_bytes)
      .def_property_readonly("sequence_bytes", &KvLayout::sequence_bytes)
      .def("slot_offset", &KvLayout::slot_offset, pb::arg("layer"), pb::arg("block"));

  pb::class_<PyKvSender>(m, "KvSender", "Layer-wise KV sender (prefill side); pages must be registered memory")
      .def(pb::init([](const std::shared_ptr<PyTransferEngine>& e, SegmentHandle peer, const KvLayout& layout) {
             auto s = std::make_unique<PyKvSender>();
             s->owner = e;
             s->sender = std::make_unique<KvSender>(*e->engine, peer, layout);
             return s;
           }), pb::arg("engine"), pb::arg("peer"), pb::arg("layout"))
      .def("begin_sequence", [](PyKvSender& s, int64_t seq, uint64_t remote_offset, uint64_t generation) {
             check(s.sender->begin_sequence(seq, remote_offset, generation));
           }, pb::arg("seq"), pb::arg("remote_offset"), pb::arg("generation"))
      .def("send_layer", [](PyKvSender& s, int64_t seq, int layer, const pb::list& pages) {
             std::vector<KvPage> p = pages_of(pages);
             check(s.sender->send_layer(seq, layer, p));
           }, pb::arg("seq"), pb::arg("layer"), pb::arg("pages"), "Queues the layer's blocks (arrays) and returns")
      .def("completed_layers", [](const PyKvSender& s, int64_t seq) { return value_or_raise(s.sender->completed_layers(seq)); },
           pb::arg("seq"))
      .def("finish_sequence", [](PyKvSender& s, int64_t seq, int timeout_ms) {
             RECUR_PY_ZONE_LOC(loc, "py.kv_finish");
             check(run_cpp(&loc, GilPolicy::kWait, [&] { return s.sender->finish_sequence(seq, milliseconds(timeout_ms)); }));
           }, pb::arg("seq"), pb::arg("timeout_ms") = 5000, "Waits for everything sent for the sequence (GIL released)");

  pb::class_<PyKvReceiver>(m, "KvReceiver", "Layer-wise KV receiver (decode side) over a receive area")
      .def(pb::init([](const pb::array& area, const KvLayout& layout) {
             auto r = std::make_unique<PyKvReceiver>();
             r->area = area;
             r->receiver = std::make_unique<KvReceiver>(array_bytes(area, "KvReceiver area"), layout);
             return r;
           }), pb::arg("area"), pb::arg("layout"))
      .def("layer_ready", [](const PyKvReceiver& r, size_t area_offset, int layer, uint64_t generation) {
             return r.receiver->layer_ready(area_offset, layer, generation);
           }, pb::arg("area_offset"), pb::arg("layer"), pb::arg("generation"))
      .def("receive_layer", [](const PyKvReceiver& r, int64_t seq, uint64_t generation, size_t area_offset, int layer,
                               const pb::list& out, int timeout_ms) {
             std::vector<KvPageOut> pages;
             for (size_t i = 0; i < out.size(); ++i) {
               std::span<std::byte> b = array_bytes(out[i].cast<pb::array>(), "receive_layer out");
               pages.push_back({b.data(), b.size()});
             }
             RECUR_PY_ZONE_LOC(loc, "py.kv_receive");
             check(run_cpp(&loc, GilPolicy::kWait, [&] {
               return r.receiver->receive_layer(seq, generation, area_offset, layer, pages, milliseconds(timeout_ms));
             }));
           }, pb::arg("seq"), pb::arg("generation"), pb::arg("area_offset"), pb::arg("layer"), pb::arg("out"),
           pb::arg("timeout_ms") = 5000, "Waits for the layer, verifies each block's checksum and copies it into out[i]");
}

}  // namespace recur::py
