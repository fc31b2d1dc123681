// Prefill on AMX tiles (kernel.gemm.amx, weights.h attach_amx_tiles) on the tile emulator: a Q8_0
// llama and qwen2 give the logits and greedy tokens of the stored kernels bit for bit, in both
// weight layouts, for prompts on both sides of 16 tokens; the trace shows the tiles ran (and only
// at m >= 16), so equality alone cannot pass a path that was never taken. With RECUR_TEST_AMX_HW=1
// on an AMX CPU, on the hardware as well.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "engine/engine_options.h"
#include "engine/model.h"
#include "engine/synthetic.h"
#include "engine/test_models.h"
#include "trace/trace.h"

namespace recur {
namespace {

// FFN 1056 wide: ffn_down's K crosses the VNNI prefill's K block of 1024, where the row layout's
// fp32 order and the 16-row groups' differ (the tiles must follow the right one).
ModelConfig wide_ffn(Arch arch) {
  ModelConfig c = testing::tiny_llama_config();
  c.arch = arch;
  c.n_layers = 2;
  c.ffn_dim = 1056;
  c.attn_bias = arch == Arch::kQwen2;  // qwen2's q, k, v biases
  return c;
}

struct PrefillRun {
  std::vector<float> logits;    // the prefill's, then each greedy step's
  std::vector<TokenId> tokens;  // the greedy continuation
  int tile_calls = 0;           // matvec zones that ran on the (emulated) tiles
  int64_t fewest_tile_tokens = 1 << 30;
};

PrefillRun run_prompt(const std::vector<std::byte>& bytes, const ModelLoadOptions& options, int prompt_tokens, ThreadPool& pool) {
  PrefillRun r;
  auto file = gguf::parse(bytes, "amx.gguf");
  EXPECT_TRUE(file.has_value());
  if (!file) return r;
  auto model = model_from_file(std::move(*file), options);
  EXPECT_TRUE(model.has_value()) << (model ? "" : model.error().message());
  if (!model) return r;
  trace::reset();
  trace::set_enabled(true);
  auto session = (*model)->new_session(pool, 64, Config());
  EXPECT_TRUE(session.has_value());
  if (session) {
    std::vector<TokenId> prompt;
    for (int i = 0; i < prompt_tokens; ++i) prompt.push_back(TokenId(3 + (i * 37) % 390));
    auto logits = (*session)->prefill(prompt);
    for (int step = 0; step < 4 && logits.has_value(); ++step) {
      r.logits.insert(r.logits.end(), logits->begin(), logits->end());
      const TokenId next = TokenId(std::max_element(logits->begin(), logits->end()) - logits->begin());
      r.tokens.push_back(next);
      logits = (*session)->step(next);
    }
    EXPECT_TRUE(logits.has_value()) << (logits ? "" : logits.error().message());
  }
  trace::set_enabled(false);
  const trace::EventTable t = trace::capture();
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.name(i) != "matvec") continue;
    const trace::Arg* amx = t.find_arg(i, "amx");
    if (amx == nullptr) continue;
    EXPECT_EQ(t.strings().str(amx->s),
              options.amx_tiles == gemm::TileBackend::kHardware ? "hardware" : "emulated");
    ++r.tile_calls;
    if (const trace::Arg* m = t.find_arg(i, "m")) r.fewest_tile_tokens = std::min(r.fewest_tile_tokens, m->i);
  }
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(AmxPrefill, EmulatedTilesGiveTheStoredKernelsBitsAndRunOnlyForPrefill) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  // The row layout's prefill is the AVX-512 VNNI kernel's order; elsewhere its bits differ by
  // design (the tiles exist only on AMX CPUs, which have VNNI), so only r16 is compared there.
  const bool vnni = active_isa() == Isa::kAvx512 && cpu_features().avx512vnni;
  if (!vnni) std::printf("[ note ] no AVX-512 VNNI: the row layout is not compared, the 16-row groups are\n");
  // The hardware too where an AMX session asks for it (docs/gemm.md, "Left for an AMX machine").
  std::vector<gemm::TileBackend> backends = {gemm::TileBackend::kEmulator};
  if (std::getenv("RECUR_TEST_AMX_HW") != nullptr && gemm::amx_support().usable()) {
    auto hw = gemm::amx_tiles_for(gemm::AmxMode::kOn);
    ASSERT_TRUE(hw.has_value()) << hw.error().message();
    backends.push_back(gemm::TileBackend::kHardware);
  }
  for (Arch arch : {Arch::kLlama, Arch::kQwen2}) {
    auto writer = synthetic_model({wide_ffn(arch), gguf::TensorType::kQ8_0, 7});
    ASSERT_TRUE(writer.has_value()) << writer.error().message();
    const std::vector<std::byte> bytes = writer->serialize();
    for (bool r16 : {false, true}) {
      if (!r16 && !vnni) continue;
      const ModelLoadOptions stored{.regroup_q8_0 = r16, .regroup_f16 = r16};
      for (size_t run = 0; run < backends.size() * 5; ++run) {
        const gemm::TileBackend backend = backends[run / 5];
        const int prompt = std::array{5, 15, 16, 17, 40}[run % 5];
        ModelLoadOptions tiles = stored;
        tiles.amx_tiles = backend;
        const std::string where = std::string(arch_name(arch)) + (r16 ? " r16" : " rows") + " prompt " +
                                  std::to_string(prompt) + " on the " +
                                  std::string(gemm::tile_backend_name(backend));
        const PrefillRun base = run_prompt(bytes, stored, prompt, **pool), amx = run_prompt(bytes, tiles, prompt, **pool);
        ASSERT_EQ(base.tokens.size(), 4u) << where;
        EXPECT_EQ(base.tile_calls, 0) << where;
        EXPECT_TRUE(same_bits(base.logits, amx.logits)) << where;
        EXPECT_EQ(base.tokens, amx.tokens) << where;
        if (prompt >= 16) {
          // 7 projections per layer (q, k, v, o, gate, up, down) at m = prompt; decode never.
          EXPECT_EQ(amx.tile_calls, 2 * 7) << where;
          EXPECT_EQ(amx.fewest_tile_tokens, prompt) << where;
        } else {
          EXPECT_EQ(amx.tile_calls, 0) << where;
        }
      }
    }
  }
}

// The logits above pass through Q8_0 activation quantization, which absorbs most one-ulp
// differences, so the fp32 order is checked here at one matmul: K = 1056 crosses the row
// layout's K block, where its order and the 16-row groups' differ in about 1 output in 7.
TEST(AmxPrefill, MatmulOnTilesFollowsTheStoredLayoutsOrder) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  const int64_t rows = 64, cols = 1056, m = 40;
  std::vector<float> wf(size_t(rows * cols)), x(size_t(m * cols));
  uint32_t state = 1;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return float(int(state >> 8) % 20001 - 10000) / 10000.0f;
  };
  for (float& v : wf) v = next();
  for (float& v : x) v = next();
  const std::vector<std::byte> q = quantize_q8_0(wf.data(), rows * cols);
  Weight plain{"w", gguf::TensorType::kQ8_0, rows, cols, q.data()};
  Weight tiled = plain;
  ASSERT_TRUE(attach_amx_tiles(tiled, gemm::TileBackend::kEmulator));
  EXPECT_FALSE(attach_amx_tiles(tiled, gemm::TileBackend::kEmulator)) << "tiles attached twice";
  std::vector<std::byte> grouped_plain(q.size()), grouped_tiled(q.size());
  auto r16_plain = regroup_weight(plain, grouped_plain.data()), r16_tiled = regroup_weight(tiled, grouped_tiled.data());
  ASSERT_TRUE(r16_plain.has_value() && r16_tiled.has_value());
  ASSERT_NE(r16_tiled->amx, nullptr);
  auto product = [&](const Weight& w) {
    std::vector<float> y(size_t(m * rows));
    matmul(w, x.data(), m, y.data(), pool->get());
    return y;
  };
  const std::vector<float> r16 = product(*r16_plain), rows_order = product(plain);
  EXPECT_TRUE(same_bits(product(*r16_tiled), r16));
  ASSERT_FALSE(same_bits(r16, rows_order)) << "the data should tell the two orders apart";
  if (active_isa() == Isa::kAvx512 && cpu_features().avx512vnni) {
    EXPECT_TRUE(same_bits(product(tiled), rows_order));
  }
}

TEST(AmxPrefill, TheKnobIsResolvedAtLoadAndRefusedWhereItCannotHold) {
  Config knobs;
  auto off = load_options_from(knobs);
  ASSERT_TRUE(off.has_value());
  EXPECT_FALSE(off->model.amx_tiles.has_value());
  ASSERT_TRUE(knobs.set("kernel.gemm.amx", "emulate").has_value());
  auto emulate = load_options_from(knobs);
  ASSERT_TRUE(emulate.has_value()) << emulate.error().message();
  EXPECT_EQ(emulate->model.amx_tiles, gemm::TileBackend::kEmulator);
  // The tiles multiply Q8_0 activations: other activations are refused, by name.
  ASSERT_TRUE(knobs.set("kernel.gemm.q8_0_activations", "f32").has_value());
  auto f32 = load_options_from(knobs);
  ASSERT_FALSE(f32.has_value());
  EXPECT_NE(f32.error().message().find("kernel.gemm.amx=emulate needs kernel.gemm.q8_0_activations=q8_0"),
            std::string::npos)
      << f32.error().message();
  // on: the hardware where it is usable, else a refusal naming the knob (no silent emulator).
  ASSERT_TRUE(knobs.set("kernel.gemm.q8_0_activations", "q8_0").has_value());
  ASSERT_TRUE(knobs.set("kernel.gemm.amx", "on").has_value());
  auto on = load_options_from(knobs);
  if (gemm::amx_support().usable()) {
    if (on.has_value()) {
      EXPECT_EQ(on->model.amx_tiles, gemm::TileBackend::kHardware);
    }
  } else {
    ASSERT_FALSE(on.has_value());
    EXPECT_NE(on.error().message().find("kernel.gemm.amx=on: "), std::string::npos) << on.error().message();
  }
}

}  // namespace
}  // namespace recur
