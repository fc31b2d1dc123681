// The mpi backend against the threads backend: run under `mpirun -np P` (ctest collectives_mpi,
// tests/collectives_mpi_test.sh). Each process computes its rank's results with MpiCollectives
// and, in-process, every rank's with RankGroup on P threads, and requires the same bytes for
// all_reduce_sum (f32 and bf16), all_gather, all_to_all_v and all_to_all. Then the engine: each
// process loads the same tiny MoE hybrid and runs its rank of the forward with
// engine.collectives=mpi at tp=P, ep=P and both, giving the threads backend's logits bit for bit
// and tp=1's greedy tokens. Exit 0 when all equal.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "core/knobs.h"
#include "core/thread_pool.h"
#include "engine/collectives_mpi.h"
#include "engine/model.h"
#include "engine/sampler.h"
#include "engine/synthetic.h"
#include "engine/test_models.h"

namespace recur {
namespace {

// Rank r's inputs: values of mixed magnitude, so a different summation order changes the bits.
std::vector<float> mpi_test_partial(int r, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = std::sin(float(i * 7 + r * 13)) * (i % 3 == 0 ? 1e7f : 1.0f) + 1e-3f * float(r);
  return v;
}
// Bytes rank s sends rank d in the all_to_all_v: varying, including empty blocks.
int64_t mpi_test_block(int s, int d) { return int64_t((s * 5 + d * 3) % 4) * 12; }
std::vector<std::byte> mpi_test_bytes(int r, int64_t n) {
  std::vector<std::byte> b(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) b[size_t(i)] = std::byte((i * 31 + r * 17) & 0xff);
  return b;
}

// Every collective on `c` as rank `rank`, its outputs appended to `out` as bytes.
void mpi_test_exercise(Collectives& c, Collectives& bf16, int rank, std::vector<std::byte>& out) {
  const int P = c.ranks();
  auto append = [&](const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out.insert(out.end(), b, b + n);
  };
  constexpr int64_t n = 1000;
  std::vector<float> partial = mpi_test_partial(rank, n), sum(static_cast<size_t>(n));
  c.all_reduce_sum(rank, partial.data(), sum.data(), n);
  append(sum.data(), sum.size() * sizeof(float));
  bf16.all_reduce_sum(rank, partial.data(), sum.data(), n);
  append(sum.data(), sum.size() * sizeof(float));
  // all_gather: rank r contributes 8 * (r + 1) bytes.
  std::vector<int64_t> sizes;
  int64_t total = 0;
  for (int r = 0; r < P; ++r) total += sizes.emplace_back(8 * (r + 1));
  std::vector<std::byte> mine = mpi_test_bytes(rank, sizes[size_t(rank)]), gathered(static_cast<size_t>(total));
  c.all_gather(rank, mine.data(), sizes, gathered.data());
  append(gathered.data(), gathered.size());
  // all_to_all_v with per-peer sizes, then the fixed-block all_to_all.
  std::vector<int64_t> send_bytes, recv_bytes;
  int64_t send_total = 0, recv_total = 0;
  for (int d = 0; d < P; ++d) send_total += send_bytes.emplace_back(mpi_test_block(rank, d));
  for (int s = 0; s < P; ++s) recv_total += recv_bytes.emplace_back(mpi_test_block(s, rank));
  std::vector<std::byte> send = mpi_test_bytes(rank, send_total), recv(static_cast<size_t>(recv_total));
  c.all_to_all_v(rank, send.data(), send_bytes, recv.data(), recv_bytes);
  append(recv.data(), recv.size());
  constexpr int64_t block = 20;
  std::vector<std::byte> fixed_send = mpi_test_bytes(rank + 100, block * P), fixed_recv(size_t(block * P));
  c.all_to_all(rank, fixed_send.data(), fixed_recv.data(), block);
  append(fixed_recv.data(), fixed_recv.size());
  c.barrier(rank);
}

// Logits of 10 greedy decode steps from token 5 at `knobs`; tokens appended to `tokens`.
std::vector<float> mpi_test_decode(const Model& model, ThreadPool& pool, const Config& knobs,
                                   std::vector<TokenId>& tokens, std::string& error) {
  std::vector<float> all;
  auto s = model.new_session(pool, 11, knobs);
  if (!s) {
    error = s.error().message();
    return all;
  }
  TokenId t = 5;
  for (int i = 0; i < 10; ++i) {
    auto logits = (*s)->step(t);
    if (!logits) {
      error = logits.error().message();
      return all;
    }
    all.insert(all.end(), logits->begin(), logits->end());
    tokens.push_back(t = argmax(*logits));
  }
  return all;
}

// The engine under mpi against the engine on threads; 0 when every configuration agrees.
int mpi_test_engine(int P, int rank) {
  // Two attention layers ("kaka"), so that under layer split each of the 2 processes owns one.
  ModelConfig config = testing::tiny_hybrid_config(4);
  config.layer_pattern = "kaka";
  auto w = synthetic_model({config, gguf::TensorType::kF32, 7});
  if (!w) return std::fprintf(stderr, "synthetic model: %s\n", w.error().message().c_str()), 1;
  std::vector<std::byte> bytes = w->serialize();
  auto model = model_from_file(std::move(*gguf::parse(bytes, "mpi-hybrid.gguf")));
  if (!model) return std::fprintf(stderr, "model: %s\n", model.error().message().c_str()), 1;
  auto pool = ThreadPool::create({.threads = 1, .pin = false});
  std::string error;
  std::vector<TokenId> want;
  mpi_test_decode(**model, **pool, Config(), want, error);
  const std::string p = std::to_string(P);
  const std::vector<std::vector<std::pair<std::string, std::string>>> configs = {
      {{"engine.tp", p}}, {{"engine.ep", p}}, {{"engine.ep", p}, {"engine.ep.dispatch_mode", "low_latency"}},
      {{"engine.tp", p}, {"engine.ep", p}}, {{"engine.tp", p}, {"engine.layer_split", "on"}}};
  for (const auto& config : configs) {
    Config threads, mpi;
    std::string name;
    for (const auto& [k, v] : config) {
      (void)threads.set(k, v);
      (void)mpi.set(k, v);
      name += k + "=" + v + " ";
    }
    if (auto set = mpi.set("engine.collectives", "mpi"); !set) error = set.error().message();
    std::vector<TokenId> t_tokens, m_tokens;
    const std::vector<float> t_logits = mpi_test_decode(**model, **pool, threads, t_tokens, error);
    const std::vector<float> m_logits = mpi_test_decode(**model, **pool, mpi, m_tokens, error);
    if (!error.empty()) return std::fprintf(stderr, "rank %d, %s: %s\n", rank, name.c_str(), error.c_str()), 1;
    if (m_logits != t_logits || m_tokens != want) {
      std::fprintf(stderr, "rank %d, %s: mpi logits %s the threads backend's, tokens %s tp=1's\n", rank,
                   name.c_str(), m_logits == t_logits ? "equal" : "differ from",
                   m_tokens == want ? "equal" : "differ from");
      return 1;
    }
    std::printf("collectives_mpi_test rank %d of %d: engine %swith engine.collectives=mpi: %zu logits equal to "
                "threads bit for bit, tokens equal to tp=1\n",
                rank, P, name.c_str(), m_logits.size());
  }
  return 0;
}

int mpi_test_main() {
  use_mpi_collectives();
  auto mpi = MpiCollectives::create();
  if (!mpi) {
    std::fprintf(stderr, "collectives_mpi_test: %s\n", mpi.error().message().c_str());
    return 1;
  }
  auto mpi_bf16 = MpiCollectives::create(0, ReduceDtype::kBf16);
  const int P = (*mpi)->ranks(), rank = (*mpi)->rank();
  std::vector<std::byte> got;
  mpi_test_exercise(**mpi, **mpi_bf16, rank, got);

  RankGroup threads(P, 1000), threads_bf16(P, 1000, ReduceDtype::kBf16);
  std::vector<std::vector<std::byte>> want(static_cast<size_t>(P));
  std::vector<std::thread> workers;
  for (int r = 0; r < P; ++r)
    workers.emplace_back([&, r] { mpi_test_exercise(threads, threads_bf16, r, want[size_t(r)]); });
  for (std::thread& t : workers) t.join();

  const std::vector<std::byte>& ref = want[size_t(rank)];
  if (got.size() != ref.size() || std::memcmp(got.data(), ref.data(), got.size()) != 0) {
    size_t i = 0;
    while (i < std::min(got.size(), ref.size()) && got[i] == ref[i]) ++i;
    std::fprintf(stderr, "collectives_mpi_test rank %d of %d: mpi and threads differ at byte %zu of %zu\n", rank, P,
                 i, ref.size());
    return 1;
  }
  std::printf("collectives_mpi_test rank %d of %d: all_reduce_sum (f32, bf16), all_gather, all_to_all_v and "
              "all_to_all give the threads backend's %zu bytes\n",
              rank, P, got.size());
  return mpi_test_engine(P, rank);
}

}  // namespace
}  // namespace recur

int main() { return recur::mpi_test_main(); }
