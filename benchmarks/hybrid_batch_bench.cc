// Batched decode of a hybrid model (Model::new_batch, engine/hybrid_batch.h): every
// configuration (batch size x engine.tp x engine.ep x engine.kda.replay) runs once per round, the order
// rotating between rounds, so load drifts hit every configuration alike.
//
// One run: a fresh batch of B sequences; one forward prefills all B prompts (--prompt tokens
// each, ids drawn with a fixed seed); then --decode steps of one greedy token per sequence,
// one forward each. Reported per configuration: decode tokens/s (B * decode / time) and
// prefill tokens/s, median and [min, max] over the rounds, and the decode ratio to the first
// configuration paired by round (both ran within seconds of each other, so a slow round from
// other tenants' load cancels).
//
//   bench_hybrid_batch -m MODEL [--batch 1,8,32] [--tp 1,2] [--ep 1,2] [--replay off,on] [--prompt 16]
//                      [--decode 16] [--runs 5] [--warmup 1] [--threads 2] [--layer-split off,on]
//                      [--capacity-mib N] [--set knob=value ...]
// Warm-up rounds (every configuration once, not reported) fault the model's pages in first.
//
// --capacity-mib N: instead of timing, for each --tp x --layer-split, a batch whose KV pool is
// the most pages that fit N MiB on the busiest rank (engine.layer_split changes a rank's bytes
// per page, hybrid_batch.h); sequences of --prompt tokens are added and prefilled one by one
// until the pool refuses. Reports the sequences admitted, next to pages / pages per sequence.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "../benchmarks/bench_args.h"
#include "core/knobs.h"
#include "core/thread_pool.h"
#include "engine/forward.h"
#include "engine/model.h"
#include "engine/sampler.h"

namespace {

using recur::BatchToken;
using recur::TokenId;

struct HybridBenchConfig {
  int batch;
  std::string tp, ep, replay, split;
  std::vector<double> decode_tok_s, prefill_tok_s;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One run of `c`; false (after printing why) on an error.
bool run_once(const recur::Model& model, recur::ThreadPool& pool, HybridBenchConfig& c, int prompt, int decode,
              recur::Config knobs) {
  if (!knobs.set("engine.tp", c.tp) || !knobs.set("engine.ep", c.ep) || !knobs.set("engine.kda.replay", c.replay) ||
      !knobs.set("engine.layer_split", c.split))
    return false;
  auto made = model.new_batch(pool, {.max_sequences = c.batch, .max_tokens = prompt + decode,
                                     .max_batch_tokens = std::max(c.batch * prompt, c.batch)}, knobs);
  if (!made) {
    std::fprintf(stderr, "batch %d tp %s: %s\n", c.batch, c.tp.c_str(), made.error().message().c_str());
    return false;
  }
  recur::Batch& batch = **made;
  std::vector<recur::SeqId> seqs;
  std::vector<BatchToken> rows;
  uint32_t rng = 12345;
  for (int s = 0; s < c.batch; ++s) {
    seqs.push_back(*batch.add_sequence());
    for (int i = 0; i < prompt; ++i) {
      rng = rng * 1664525u + 1013904223u;
      rows.push_back({.seq = seqs.back(), .token = TokenId(3 + rng % uint32_t(model.config().vocab - 3)),
                      .want_logits = i + 1 == prompt});
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto logits = batch.forward(rows);
  if (!logits) return false;
  c.prefill_tok_s.push_back(double(rows.size()) / seconds_since(t0));
  const size_t vocab = size_t(model.config().vocab);
  const auto t1 = std::chrono::steady_clock::now();
  for (int step = 0; step < decode; ++step) {
    rows.clear();
    for (int s = 0; s < c.batch; ++s)
      rows.push_back({.seq = seqs[size_t(s)], .token = recur::argmax(logits->subspan(size_t(s) * vocab, vocab)),
                      .want_logits = true});
    logits = batch.forward(rows);
    if (!logits) {
      std::fprintf(stderr, "decode: %s\n", logits.error().message().c_str());
      return false;
    }
  }
  c.decode_tok_s.push_back(double(c.batch) * decode / seconds_since(t1));
  return true;
}

// The busiest rank's KV bytes per page under `knobs` (a one-page batch, measured).
int64_t busiest_rank_page_bytes(const recur::Model& model, recur::ThreadPool& pool, recur::Config knobs) {
  if (!knobs.set("engine.hybrid.kv_pages", "1")) return -1;
  auto made = model.new_batch(pool, {.max_sequences = 1, .max_tokens = 16, .max_batch_tokens = 16}, knobs);
  if (!made) {
    std::fprintf(stderr, "capacity: %s\n", made.error().message().c_str());
    return -1;
  }
  auto* batch = dynamic_cast<recur::Forward*>(made->get());
  if (batch == nullptr) return -1;
  const std::vector<int64_t> bytes = batch->kv_bytes_per_rank();
  return *std::max_element(bytes.begin(), bytes.end());
}

// Sequences of `prompt` tokens admitted, one by one, until the pool of `budget` bytes per rank
// refuses; false on any other error.
bool run_capacity(const recur::Model& model, recur::ThreadPool& pool, const std::string& tp, const std::string& split,
                  int prompt, int64_t budget, recur::Config knobs) {
  if (!knobs.set("engine.tp", tp) || !knobs.set("engine.layer_split", split)) return false;
  const int64_t page_bytes = busiest_rank_page_bytes(model, pool, knobs);
  if (page_bytes <= 0) return false;
  const int64_t pages = budget / page_bytes, per_seq = (prompt + 15) / 16;
  if (!knobs.set("engine.hybrid.kv_pages", std::to_string(pages))) return false;
  const int max_sequences = int(pages / per_seq) + 2;
  auto made = model.new_batch(pool, {.max_sequences = max_sequences, .max_tokens = prompt,
                                     .max_batch_tokens = std::min(prompt, 1024)}, knobs);
  if (!made) {
    std::fprintf(stderr, "capacity tp %s: %s\n", tp.c_str(), made.error().message().c_str());
    return false;
  }
  recur::Batch& batch = **made;
  int admitted = 0;
  for (bool refused = false; !refused && admitted < max_sequences;) {
    auto seq = batch.add_sequence();
    if (!seq) break;
    for (int done = 0; done < prompt && !refused;) {
      const int n = std::min(prompt - done, 1024);
      std::vector<BatchToken> rows;
      for (int i = 0; i < n; ++i)
        rows.push_back({.seq = *seq, .token = TokenId(3 + (admitted * 7919 + done + i) % 300), .want_logits = false});
      auto r = batch.forward(rows);
      if (!r && r.error().code() != recur::ErrorCode::kFailedPrecondition) {
        std::fprintf(stderr, "capacity: %s\n", r.error().message().c_str());
        return false;
      }
      refused = !r;
      done += n;
    }
    if (!refused) ++admitted;
  }
  std::printf("capacity tp %s  layer_split %-3s  %6.2f KiB/page on the busiest rank  %6lld pages  "
              "%3d sequences of %d tokens admitted (pages / pages per sequence: %lld)  pool %s\n",
              tp.c_str(), split.c_str(), double(page_bytes) / 1024, (long long)pages, admitted, prompt,
              (long long)(pages / per_seq), batch.kv_usage().pages_used == batch.kv_usage().pages_total ? "full" : "not full");
  return true;
}

void print_stat(const char* what, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const double median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  std::printf("  %s %8.1f tok/s [%.1f .. %.1f]", what, median, v.front(), v.back());
}

}  // namespace

int main(int argc, char** argv) {
  const char* prog = "bench_hybrid_batch";
  std::string model_path;
  std::vector<std::string> batches = {"1", "8", "32"}, tps = {"1"}, eps = {"1"}, replays = {"off"},
                           splits = {"off"};
  int prompt = 16, decode = 16, runs = 5, warmup = 1, threads = 2;
  int64_t capacity_mib = 0;
  recur::Config knobs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-m") model_path = recur::bench::flag_value(argc, argv, i, prog);
    else if (a == "--batch") batches = recur::bench::split_list(recur::bench::flag_value(argc, argv, i, prog));
    else if (a == "--tp") tps = recur::bench::split_list(recur::bench::flag_value(argc, argv, i, prog));
    else if (a == "--ep") eps = recur::bench::split_list(recur::bench::flag_value(argc, argv, i, prog));
    else if (a == "--layer-split") splits = recur::bench::split_list(recur::bench::flag_value(argc, argv, i, prog));
    else if (a == "--capacity-mib") capacity_mib = std::atoll(recur::bench::flag_value(argc, argv, i, prog));
    else if (a == "--replay") replays = recur::bench::split_list(recur::bench::flag_value(argc, argv, i, prog));
    else if (a == "--prompt") prompt = std::atoi(recur::bench::flag_value(argc, argv, i, prog));
    else if (a == "--decode") decode = std::atoi(recur::bench::flag_value(argc, argv, i, prog));
    else if (a == "--runs") runs = std::atoi(recur::bench::flag_value(argc, argv, i, prog));
    else if (a == "--warmup") warmup = std::atoi(recur::bench::flag_value(argc, argv, i, prog));
    else if (a == "--set") {
      if (auto s = knobs.set_assignment(recur::bench::flag_value(argc, argv, i, prog)); !s) {
        std::fprintf(stderr, "%s: --set: %s\n", prog, s.error().message().c_str());
        return 2;
      }
    } else if (a == "--threads") threads = std::atoi(recur::bench::flag_value(argc, argv, i, prog));
    else {
      std::fprintf(stderr, "%s: unknown argument %s\n", prog, argv[i]);
      return 2;
    }
  }
  if (model_path.empty() || prompt < 1 || decode < 1 || runs < 1) {
    std::fprintf(stderr, "usage: %s -m MODEL [--batch 1,8,32] [--tp 1,2] [--ep 1,2] [--replay off,on] [--prompt N] "
                         "[--decode N] [--runs N] [--warmup N] [--threads N] [--layer-split off,on] [--capacity-mib N] "
                         "[--set knob=value]\n", prog);
    return 2;
  }
  auto model = recur::load_model(model_path);
  if (!model) {
    std::fprintf(stderr, "%s: %s\n", prog, model.error().message().c_str());
    return 1;
  }
  auto pool = recur::ThreadPool::create({.threads = threads, .pin = true});
  if (!pool) return 1;
  if (capacity_mib > 0) {
    for (const auto& tp : tps)
      for (const auto& split : splits)
        if (!run_capacity(**model, **pool, tp, split, prompt, capacity_mib << 20, knobs)) return 1;
    return 0;
  }
  std::vector<HybridBenchConfig> configs;
  for (const auto& b : batches)
    for (const auto& tp : tps)
      for (const auto& ep : eps)
        for (const auto& r : replays)
          for (const auto& split : splits) configs.push_back({std::atoi(b.c_str()), tp, ep, r, split, {}, {}});
  for (int round = -warmup; round < runs; ++round)
    for (size_t k = 0; k < configs.size(); ++k) {
      HybridBenchConfig& c = configs[(k + size_t(round + warmup)) % configs.size()];
      if (!run_once(**model, **pool, c, prompt, decode, knobs)) return 1;
      if (round < 0) {
        c.decode_tok_s.clear();
        c.prefill_tok_s.clear();
      }
    }
  std::printf("%s: %d rounds, prompt %d, decode %d, %d threads\n", model_path.c_str(), runs, prompt, decode, threads);
  for (const auto& c : configs) {
    std::printf("batch %3d  tp %s  ep %s  replay %-3s  layer_split %-3s", c.batch, c.tp.c_str(), c.ep.c_str(),
                c.replay.c_str(), c.split.c_str());
    print_stat("decode", c.decode_tok_s);
    print_stat("  prefill", c.prefill_tok_s);
    std::vector<double> ratio;
    for (size_t i = 0; i < c.decode_tok_s.size(); ++i) ratio.push_back(c.decode_tok_s[i] / configs[0].decode_tok_s[i]);
    std::sort(ratio.begin(), ratio.end());
    std::printf("  decode/first %.2f [%.2f .. %.2f]", ratio[ratio.size() / 2], ratio.front(), ratio.back());
    if (splits.size() > 1) {
      // Paired by round against the same configuration with the first --layer-split value.
      const auto base = std::find_if(configs.begin(), configs.end(), [&](const HybridBenchConfig& o) {
        return o.batch == c.batch && o.tp == c.tp && o.ep == c.ep && o.replay == c.replay && o.split == splits[0];
      });
      std::vector<double> d, f;
      for (size_t i = 0; i < c.decode_tok_s.size(); ++i) {
        d.push_back(c.decode_tok_s[i] / base->decode_tok_s[i]);
        f.push_back(c.prefill_tok_s[i] / base->prefill_tok_s[i]);
      }
      std::sort(d.begin(), d.end());
      std::sort(f.begin(), f.end());
      std::printf("  vs split %s: decode %.2f [%.2f .. %.2f] prefill %.2f [%.2f .. %.2f]", splits[0].c_str(),
                  d[d.size() / 2], d.front(), d.back(), f[f.size() / 2], f.front(), f.back());
    }
    std::printf("\n");
  }
  return 0;
}
