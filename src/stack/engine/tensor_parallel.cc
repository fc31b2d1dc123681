#include "engine/tensor_parallel.h"

#include <cstring>

#include "core/convert.h"
#include "core/knobs.h"
#include "core/thread_pool.h"
#include "engine/w8a8.h"
#include "trace/trace.h"

namespace recur {

Result<std::unique_ptr<OwnedWeight>> row_parallel_shard(const Weight& w, Span cols, int ranks) {
  if (ranks == 1) return std::make_unique<OwnedWeight>(OwnedWeight{w, {}});
  return weight_cols(w, cols.begin, cols.end);
}

namespace {

// Columns [c0, c1) (whole blocks) of a regrouped weight, regrouped the same way (gemm.h): F16,
// per 16-row group the columns' 32 bytes each; Q8_0, per group the blocks' quants, then their
// scales.
void copy_regrouped_cols(const Weight& w, int64_t c0, int64_t c1, std::byte* out) {
  if (w.type == gguf::TensorType::kF16) {
    const size_t column = size_t(gemm::kQ8R16Rows) * 2;
    for (int64_t g = 0; g < w.rows / gemm::kQ8R16Rows; ++g)
      std::memcpy(out + size_t(g * (c1 - c0)) * column, w.data + size_t(g * w.cols + c0) * column,
                  size_t(c1 - c0) * column);
    return;
  }
  constexpr size_t kQuants = size_t(gemm::kQ8R16Rows) * gemm::kQ8Block, kScales = size_t(gemm::kQ8R16Rows) * 2;
  const int64_t blocks = w.cols / gemm::kQ8Block, b0 = c0 / gemm::kQ8Block, nb = (c1 - c0) / gemm::kQ8Block;
  for (int64_t g = 0; g < w.rows / gemm::kQ8R16Rows; ++g) {
    const std::byte* src = w.data + size_t(g * blocks) * (kQuants + kScales);
    std::byte* dst = out + size_t(g * nb) * (kQuants + kScales);
    std::memcpy(dst, src + size_t(b0) * kQuants, size_t(nb) * kQuants);
    std::memcpy(dst + size_t(nb) * kQuants, src + size_t(blocks) * kQuants + size_t(b0) * kScales, size_t(nb) * kScales);
  }
}

}  // namespace

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
  if (w.regrouped) {
    copy_regrouped_cols(w, c0, c1, out->storage.data());
  } else {
    for (int64_t r = 0; r < w.rows; ++r)
      std::memcpy(out->storage.data() + size_t(r) * dst_row, w.data + size_t(r) * src_row + offset, dst_row);
  }
  out->view.data = out->storage.data();
  out->view.storage = nullptr;
  if (out->view.cols != w.cols) out->view.amx = nullptr;  // the tiles hold every column
  if (out->view.scale != nullptr) refresh_w8a8_compensation(out->view);  // W8A8: sums over the shard's columns
  return out;
}

Result<size_t> release_copied_sources(const MappedFile& mapping, std::span<const Weight* const> sources) {
  size_t released = 0;
  for (const Weight* w : sources) {
    const size_t bytes = w->row_bytes() * size_t(w->rows);
    if (w->data == nullptr || !mapping.contains(w->data, bytes)) continue;
    RECUR_ASSIGN_OR_RETURN(size_t n, mapping.release_pages(w->data, bytes));
    released += n;
  }
  return released;
}

Span rank_span(int64_t n, int ranks, int rank, int64_t granule) {
  int64_t units = n / granule;
  int64_t base = units / ranks, extra = units % ranks;
  int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  int64_t len = base + (rank < extra ? 1 : 0);
  return {begin * granule, (begin + len) * granule};
}

RankGroup::RankGroup(int ranks, int64_t max_elements, ReduceDtype dtype)
    : ranks_(ranks), dtype_(dtype), barrier_(ranks),
      slots_(size_t(ranks), std::vector<float>(size_t(max_elements))), posted_(size_t(ranks)) {}

void stage_partial(const float* partial, float* slot, int64_t n, ReduceDtype dtype) {
  if (dtype == ReduceDtype::kBf16) {
    for (int64_t i = 0; i < n; ++i) slot[i] = bf16_to_fp32(fp32_to_bf16(partial[i]));
  } else if (slot != partial) {
    std::memcpy(slot, partial, size_t(n) * sizeof(float));
  }
}

void sum_partials_in_rank_order(std::span<const float* const> slots, float* out, int64_t n, ReduceDtype dtype) {
  for (int64_t i = 0; i < n; ++i) {
    float s = slots[0][i];
    for (size_t r = 1; r < slots.size(); ++r) s += slots[r][i];
    out[i] = dtype == ReduceDtype::kBf16 ? bf16_to_fp32(fp32_to_bf16(s)) : s;
  }
}

void RankGroup::all_reduce_sum(int rank, const float* partial, float* out, int64_t n) {
  if (ranks_ == 1) {
    if (out != partial) std::memcpy(out, partial, size_t(n) * sizeof(float));
    return;
  }
  stage_partial(partial, slots_[size_t(rank)].data(), n, dtype_);
  barrier_.arrive_and_wait();
  std::vector<const float*> slots;
  for (const auto& s : slots_) slots.push_back(s.data());
  sum_partials_in_rank_order(slots, out, n, dtype_);
  barrier_.arrive_and_wait();  // nobody refills a slot before everyone has read it
}

void RankGroup::all_gather(int rank, const void* send, std::span<const int64_t> bytes, void* out) {
  posted_[size_t(rank)] = {static_cast<const std::byte*>(send), bytes};
  barrier_.arrive_and_wait();
  auto* dst = static_cast<std::byte*>(out);
  for (int s = 0; s < ranks_; ++s) {
    if (bytes[size_t(s)] > 0) std::memcpy(dst, posted_[size_t(s)].data, size_t(bytes[size_t(s)]));
    dst += bytes[size_t(s)];
  }
  barrier_.arrive_and_wait();  // senders keep their buffers until everyone has copied
}

void RankGroup::all_to_all_v(int rank, const void* send, std::span<const int64_t> send_bytes, void* recv,
                             std::span<const int64_t> recv_bytes) {
  posted_[size_t(rank)] = {static_cast<const std::byte*>(send), send_bytes};
  barrier_.arrive_and_wait();
  auto* dst = static_cast<std::byte*>(recv);
  for (int s = 0; s < ranks_; ++s) {
    const Posted& p = posted_[size_t(s)];
    int64_t offset = 0;  // rank s's block for this rank follows its blocks for ranks 0..rank-1
    for (int d = 0; d < rank; ++d) offset += p.bytes[size_t(d)];
    if (recv_bytes[size_t(s)] > 0) std::memcpy(dst, p.data + offset, size_t(recv_bytes[size_t(s)]));
    dst += recv_bytes[size_t(s)];
  }
  barrier_.arrive_and_wait();
}

Result<std::unique_ptr<RankRunner>> RankRunner::create(int ranks, int64_t max_elements, ReduceDtype dtype) {
  auto r = std::unique_ptr<RankRunner>(new RankRunner());
  RECUR_ASSIGN_OR_RETURN(r->pool_, ThreadPool::create({.threads = ranks, .pin = true}));
  r->group_ = std::make_unique<RankGroup>(ranks, max_elements, dtype);
  return r;
}

RankRunner::~RankRunner() = default;

void RankRunner::run(const std::function<void(int rank)>& fn) {
  pool_->run_on_all([&](int r) {
    static const char* const kRankNames[] = {"rank 0", "rank 1", "rank 2", "rank 3",
                                             "rank 4", "rank 5", "rank 6", "rank 7"};
    if (r < 8) trace::set_thread_name(kRankNames[r]);
    fn(r);
  });
}

}  // namespace recur
