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
//                      [--decode 16] [--runs 5] [--warmup 1] [--threads 2] [--set knob=value ...]
// Warm-up rounds (every configuration once, not reported) fault the model's pages in first.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "../benchmarks/bench_args.h"
#include "core/knobs.h"
#include "core/thread_pool.h"
#include "engine/model.h"
#include "engine/sampler.h"

namespace {

using recur::BatchToken;
using recur::TokenId;

struct HybridBenchConfig {
  int batch;
  std::string tp, ep, replay;
  std::vector<double> decode_tok_s, prefill_tok_s;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One run of `c`; false (after printing why) on an error.
bool run_once(const recur::Model& model, recur::ThreadPool& pool, HybridBenchConfig& c, int prompt, int decode,
              recur::Config knobs) {
  if (!knobs.set("engine.tp", c.tp) || !knobs.set("engine.ep", c.ep) || !knobs.set("engine.kda.replay", c.replay))
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

void print_stat(const char* what, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const double median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  std::printf("  %s %8.1f tok/s [%.1f .. %.1f]", what, median, v.front(), v.back());
}

}  // namespace

int main(int argc, char** argv) {
  const char* prog = "bench_hybrid_batch";
  std::string model_path;
  std::vector<std::string> batches = {"1", "8", "32"}, tps = {"1"}, eps = {"1"}, replays = {"off"};
  int prompt = 16, decode = 16, runs = 5, warmup = 1, threads = 2;
  recur::Config knobs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-m") model_path = recur::bench::flag_value(argc, argv, i, prog);
    else if (a == "--batch") batches = recur::bench::split_list(recur::bench::flag_value(argc, argv, i, prog));
    else if (a == "--tp") tps = recur::bench::split_list(recur::bench::flag_value(argc, argv, i, prog));
    else if (a == "--ep") eps = recur::bench::split_list(recur::bench::flag_value(argc, argv, i, prog));
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
                         "[--decode N] [--runs N] [--warmup N] [--threads N] [--set knob=value]\n", prog);
    return 2;
  }
  auto model = recur::load_model(model_path);
  if (!model) {
    std::fprintf(stderr, "%s: %s\n", prog, model.error().message().c_str());
    return 1;
  }
  auto pool = recur::ThreadPool::create({.threads = threads, .pin = true});
  if (!pool) return 1;
  std::vector<HybridBenchConfig> configs;
  for (const auto& b : batches)
    for (const auto& tp : tps)
      for (const auto& ep : eps)
        for (const auto& r : replays) configs.push_back({std::atoi(b.c_str()), tp, ep, r, {}, {}});
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
    std::printf("batch %3d  tp %s  ep %s  replay %-3s", c.batch, c.tp.c_str(), c.ep.c_str(), c.replay.c_str());
    print_stat("decode", c.decode_tok_s);
    print_stat("  prefill", c.prefill_tok_s);
    std::vector<double> ratio;
    for (size_t i = 0; i < c.decode_tok_s.size(); ++i) ratio.push_back(c.decode_tok_s[i] / configs[0].decode_tok_s[i]);
    std::sort(ratio.begin(), ratio.end());
    std::printf("  decode/first %.2f [%.2f .. %.2f]", ratio[ratio.size() / 2], ratio.front(), ratio.back());
    std::printf("\n");
  }
  return 0;
}
