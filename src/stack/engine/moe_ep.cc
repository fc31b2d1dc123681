#include "engine/moe_ep.h"

#include <algorithm>
#include <cstring>

#include "core/knobs.h"
#include "engine/layers.h"
#include "trace/trace.h"

namespace recur::moe {

Span ep_experts(int n_experts, int ep, int rank) { return rank_span(n_experts, ep, rank); }

namespace {

// A dispatched row: its header (the owner's token index, the expert) and the hidden state.
struct EpSlotHeader {
  int32_t row;
  int32_t expert;
};
constexpr int64_t kEpCountBytes = 8;  // low_latency: each block starts with its row count

struct EpPair {
  int64_t row;
  int expert;
  float weight;
};

int64_t ep_slot_bytes(int64_t dim) { return int64_t(sizeof(EpSlotHeader)) + dim * int64_t(sizeof(float)); }

}  // namespace

void ep_moe_forward(const EpLayer& L, const float* h, const int32_t* ids, const float* weights, int64_t rows,
                    const ExpertFn& expert, EpWorkspace& ws, float* y) {
  Collectives& comm = *L.comm;
  const int P = comm.ranks();
  const size_t ranks = size_t(P);
  const int64_t dim = L.dim, slot = ep_slot_bytes(dim);
  const int per_rank = L.n_experts / P;
  const bool low_latency = L.mode == DispatchMode::kLowLatency;
  const int64_t capacity = L.max_rows_per_rank * std::min(L.top_k, per_rank);
  const int64_t block = kEpCountBytes + capacity * slot;  // low_latency's fixed peer block

  // Each destination's pairs in (token, ascending expert) order.
  std::vector<std::vector<EpPair>> to(ranks);
  for (int64_t i = 0; i < rows; ++i) {
    std::vector<std::pair<int, float>> chosen;
    for (int64_t j = 0; j < L.top_k; ++j) chosen.emplace_back(ids[i * L.top_k + j], weights[i * L.top_k + j]);
    std::sort(chosen.begin(), chosen.end());
    for (auto [e, w] : chosen) to[size_t(e / per_rank)].push_back({i, e, w});
  }
  std::vector<int64_t> send_off(ranks), recv_off(ranks);
  ws.send_rows.assign(ranks, 0);
  ws.recv_rows.assign(ranks, 0);
  ws.send_bytes.assign(ranks, 0);
  ws.recv_bytes.assign(ranks, 0);
  {
    RECUR_ZONE("moe.dispatch");
    int64_t sent = 0, bytes = 0;
    for (size_t d = 0; d < ranks; ++d) sent += ws.send_rows[d] = int64_t(to[d].size());
    if (low_latency) {
      ws.send.resize(size_t(P * block));
      ws.recv.resize(size_t(P * block));
      for (size_t d = 0; d < ranks; ++d) {
        send_off[d] = recv_off[d] = int64_t(d) * block + kEpCountBytes;
        std::memcpy(ws.send.data() + int64_t(d) * block, &ws.send_rows[d], sizeof(int64_t));
      }
    } else {
      // The counts round: what each peer will receive from this rank.
      comm.all_to_all(L.rank, ws.send_rows.data(), ws.recv_rows.data(), sizeof(int64_t));
      int64_t so = 0, ro = 0;
      for (size_t d = 0; d < ranks; ++d) {
        send_off[d] = so;
        recv_off[d] = ro;
        so += ws.send_bytes[d] = ws.send_rows[d] * slot;
        ro += ws.recv_bytes[d] = ws.recv_rows[d] * slot;
      }
      ws.send.resize(size_t(so));
      ws.recv.resize(size_t(ro));
      bytes += P * int64_t(sizeof(int64_t));
    }
    for (size_t d = 0; d < ranks; ++d) {
      std::byte* dst = ws.send.data() + send_off[d];
      for (const EpPair& p : to[d]) {
        const EpSlotHeader header{int32_t(p.row), int32_t(p.expert)};
        std::memcpy(dst, &header, sizeof(header));
        std::memcpy(dst + sizeof(header), h + p.row * dim, size_t(dim) * sizeof(float));
        dst += slot;
      }
    }
    if (low_latency) {
      comm.all_to_all(L.rank, ws.send.data(), ws.recv.data(), block);
      for (size_t s = 0; s < ranks; ++s)
        std::memcpy(&ws.recv_rows[s], ws.recv.data() + int64_t(s) * block, sizeof(int64_t));
      bytes += P * block;
    } else {
      comm.all_to_all_v(L.rank, ws.send.data(), ws.send_bytes, ws.recv.data(), ws.recv_bytes);
      bytes += int64_t(ws.send.size());
    }
    zone.arg("tokens", sent);
    zone.arg("bytes", bytes);
  }

  // Each local expert once, over its rows in arrival order; outputs overwrite the rows in place.
  const Span mine = ep_experts(L.n_experts, P, L.rank);
  std::vector<std::vector<std::byte*>> by_expert(size_t(mine.size()));
  for (size_t s = 0; s < ranks; ++s)
    for (int64_t j = 0; j < ws.recv_rows[s]; ++j) {
      std::byte* at = ws.recv.data() + recv_off[s] + j * slot;
      EpSlotHeader header;
      std::memcpy(&header, at, sizeof(header));
      by_expert[size_t(header.expert - mine.begin)].push_back(at + sizeof(header));
    }
  for (int64_t e = 0; e < mine.size(); ++e) {
    const std::vector<std::byte*>& at = by_expert[size_t(e)];
    const int64_t m = int64_t(at.size());
    if (m == 0) continue;
    ws.x.resize(size_t(m * dim));
    ws.y.resize(size_t(m * dim));
    for (int64_t j = 0; j < m; ++j) std::memcpy(ws.x.data() + j * dim, at[size_t(j)], size_t(dim) * sizeof(float));
    expert(int(mine.begin + e), ws.x.data(), m, ws.y.data());
    for (int64_t j = 0; j < m; ++j) std::memcpy(at[size_t(j)], ws.y.data() + j * dim, size_t(dim) * sizeof(float));
  }

  RECUR_ZONE("moe.combine");
  int64_t returned = 0;
  for (size_t s = 0; s < ranks; ++s) returned += ws.recv_rows[s];
  if (low_latency) {
    comm.all_to_all(L.rank, ws.recv.data(), ws.send.data(), block);
    zone.arg("bytes", P * block);
  } else {
    comm.all_to_all_v(L.rank, ws.recv.data(), ws.recv_bytes, ws.send.data(), ws.send_bytes);
    zone.arg("bytes", int64_t(ws.recv.size()));
  }
  zone.arg("tokens", returned);
  // The owner's reduction: per token, experts in ascending index (as EP=1 adds them).
  struct Returned {
    EpPair pair;
    const std::byte* out;
  };
  std::vector<Returned> back;
  for (size_t d = 0; d < ranks; ++d)
    for (size_t j = 0; j < to[d].size(); ++j)
      back.push_back({to[d][j], ws.send.data() + send_off[d] + int64_t(j) * slot + int64_t(sizeof(EpSlotHeader))});
  std::sort(back.begin(), back.end(), [](const Returned& a, const Returned& b) {
    return a.pair.row != b.pair.row ? a.pair.row < b.pair.row : a.pair.expert < b.pair.expert;
  });
  std::fill_n(y, rows * dim, 0.0f);
  ws.y.resize(size_t(dim));
  for (const Returned& r : back) {
    std::memcpy(ws.y.data(), r.out, size_t(dim) * sizeof(float));
    float* yr = y + r.pair.row * dim;
    const float w = r.pair.weight;
    for (int64_t i = 0; i < dim; ++i) yr[i] = yr[i] + w * ws.y[size_t(i)];
  }
}

}  // namespace recur::moe
