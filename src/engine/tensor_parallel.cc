#include "engine/tensor_parallel.h"

#include <cstring>

#include "core/knobs.h"

namespace recur {

RECUR_KNOB(engine_tp, {.name = "engine.tp", .type = KnobType::kEnum, .choices = {"1", "2", "4", "8"},
                       .default_value = "1", .components = {"engine:tp", "thread:rank"},
                       .help = "tensor-parallel ranks (pinned threads, each owning a weight shard); more ranks "
                               "than cores runs correctly, just not faster"});

Result<std::unique_ptr<OwnedWeight>> weight_cols(const Weight& w, int64_t c0, int64_t c1) {
  gguf::BlockLayout b = gguf::block_layout(w.type);
  if (c0 % b.elements != 0 || c1 % b.elements != 0 || c1 <= c0 || c1 > w.cols)
    return invalid_argument("tensor '{}': column shard [{}, {}) of {} is not whole {}-element blocks", w.name, c0, c1,
                            w.cols, b.elements);
  auto out = std::make_unique<OwnedWeight>();
  out->view = w;
  out->view.cols = c1 - c0;
  const size_t src_row = w.row_bytes(), dst_row = out->view.row_bytes();
  const size_t offset = size_t(c0 / b.elements) * b.bytes;
  out->storage = AlignedBuffer(dst_row * size_t(w.rows));
  for (int64_t r = 0; r < w.rows; ++r)
    std::memcpy(out->storage.data() + size_t(r) * dst_row, w.data + size_t(r) * src_row + offset, dst_row);
  out->view.data = out->storage.data();
  return out;
}

Span rank_span(int64_t n, int ranks, int rank, int64_t granule) {
  int64_t units = n / granule;
  int64_t base = units / ranks, extra = units % ranks;
  int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  int64_t len = base + (rank < extra ? 1 : 0);
  return {begin * granule, (begin + len) * granule};
}

RankGroup::RankGroup(int ranks, int64_t max_elements)
    : ranks_(ranks), barrier_(ranks), slots_(size_t(ranks), std::vector<float>(size_t(max_elements))) {}

void RankGroup::all_reduce_sum(int rank, const float* partial, float* out, int64_t n) {
  if (ranks_ == 1) {
    if (out != partial) std::memcpy(out, partial, size_t(n) * sizeof(float));
    return;
  }
  std::memcpy(slots_[size_t(rank)].data(), partial, size_t(n) * sizeof(float));
  barrier_.arrive_and_wait();
  for (int64_t i = 0; i < n; ++i) {
    float s = slots_[0][size_t(i)];
    for (int r = 1; r < ranks_; ++r) s += slots_[size_t(r)][size_t(i)];
    out[i] = s;
  }
  barrier_.arrive_and_wait();  // nobody refills a slot before everyone has read it
}

}  // namespace recur
