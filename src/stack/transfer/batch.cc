#include "transfer/batch.h"

#include <algorithm>

namespace recur::transfer {

Result<size_t> Batch::reserve(size_t n) {
  std::lock_guard lock(mu_);
  if (n > slots_.size() - used_)
    return invalid_argument("batch: {} requests submitted, {} more fit (allocated for {})", n, slots_.size() - used_,
                            slots_.size());
  size_t first = used_;
  used_ += n;
  pending_ += n;
  return first;
}

void Batch::finish_one() {
  std::lock_guard lock(mu_);
  if (--pending_ == 0) done_.notify_all();
}

void Batch::complete(size_t index, uint64_t bytes) {
  Slot& s = slots_[index];
  s.bytes = bytes;
  s.state.store(uint8_t(TransferState::kCompleted), std::memory_order_release);
  finish_one();
}

void Batch::fail(size_t index, const Error& error) {
  Slot& s = slots_[index];
  s.code = error.code();
  s.error = error.message();
  s.state.store(uint8_t(TransferState::kFailed), std::memory_order_release);
  finish_one();
}

TransferStatus Batch::status(size_t index) const {
  const Slot& s = slots_[index];
  TransferStatus out;
  out.state = TransferState(s.state.load(std::memory_order_acquire));
  if (out.state == TransferState::kCompleted) out.bytes = s.bytes;
  if (out.state == TransferState::kFailed) {
    out.error = s.error;
    out.code = s.code;
  }
  return out;
}

size_t Batch::used() const {
  std::lock_guard lock(mu_);
  return used_;
}

size_t Batch::pending() const {
  std::lock_guard lock(mu_);
  return pending_;
}

Status Batch::wait(std::chrono::milliseconds timeout) const {
  size_t used = 0;
  {
    std::unique_lock lock(mu_);
    if (!done_.wait_for(lock, timeout, [&] { return pending_ == 0; }))
      return make_error(ErrorCode::kTimeout, "batch: {} of {} requests still pending after {} ms", pending_, used_,
                        timeout.count());
    used = used_;
  }
  for (size_t i = 0; i < used; ++i) {
    TransferStatus s = status(i);
    if (s.state == TransferState::kFailed) return unexpected<Error>(Error(s.code, fmt::format("request {}: {}", i, s.error)));
  }
  return ok_status();
}

void Batch::mark_segment_failed(SegmentHandle s) {
  std::lock_guard lock(mu_);
  if (std::find(failed_segments_.begin(), failed_segments_.end(), s) == failed_segments_.end())
    failed_segments_.push_back(s);
}

bool Batch::segment_failed(SegmentHandle s) const {
  std::lock_guard lock(mu_);
  return std::find(failed_segments_.begin(), failed_segments_.end(), s) != failed_segments_.end();
}

}  // namespace recur::transfer
