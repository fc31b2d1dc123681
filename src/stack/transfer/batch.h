// A batch's request slots and their completion: the transfer thread and TCP receiver threads
// complete or fail slots; status() and wait() read them from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/status.h"
#include "transfer/transfer_engine.h"

namespace recur::transfer {

class Batch {
 public:
  explicit Batch(size_t capacity) : slots_(capacity) {}

  size_t capacity() const { return slots_.size(); }
  // Reserves `n` slots; returns the first index, or an error if the batch would overflow.
  Result<size_t> reserve(size_t n);

  void complete(size_t index, uint64_t bytes);
  void fail(size_t index, const Error& error);
  TransferStatus status(size_t index) const;
  size_t used() const;
  size_t pending() const;
  Status wait(std::chrono::milliseconds timeout) const;

  // "A request of this batch to segment s failed": later requests to s fail without running.
  void mark_segment_failed(SegmentHandle s);
  bool segment_failed(SegmentHandle s) const;

 private:
  struct Slot {
    std::atomic<uint8_t> state{uint8_t(TransferState::kPending)};
    uint64_t bytes = 0;
    ErrorCode code = ErrorCode::kInternal;
    std::string error;  // written before the release store of state
  };
  void finish_one();

  std::vector<Slot> slots_;
  mutable std::mutex mu_;
  mutable std::condition_variable done_;
  size_t used_ = 0;
  size_t pending_ = 0;
  std::vector<SegmentHandle> failed_segments_;
};

}  // namespace recur::transfer
