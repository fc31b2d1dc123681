// BatchScheduler (batch_scheduler.h) on a tiny hybrid model: greedy requests batched together
// (chunked prefill mixed with decode) give the tokens each gives alone through
// generate_from_ids; stop sequences and max_tokens hold per request inside a batch; a job
// cancelled while queued is not run; with KV pages for one request only, requests wait and run
// one after another; a request that can never fit fails with 500; prompts imported through
// SchedulerOptions::import_prompt (prefilled elsewhere) decode together as they would alone;
// logprobs (generated and echoed prompt tokens) equal a session's teacher-forced log-softmax.
#include "serve/batch_scheduler.h"

#include <cmath>
#include <iterator>

#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "engine/generate.h"
#include "engine/sequence_state.h"
#include "engine/synthetic.h"
#include "engine/test_models.h"

namespace recur::serve {
namespace {

struct SchedTinyModel {
  std::vector<std::byte> storage;
  std::unique_ptr<Model> model;
};

SchedTinyModel sched_tiny_model() {
  SchedTinyModel t;
  ModelConfig c = testing::tiny_hybrid_config(0);
  c.context = 128;
  auto w = synthetic_model({c, gguf::TensorType::kF32, 7});
  EXPECT_TRUE(w.has_value());
  t.storage = w->serialize();
  auto m = model_from_file(std::move(*gguf::parse(t.storage, "sched.gguf")));
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().message());
  t.model = std::move(*m);
  return t;
}

PreparedRequest greedy_request(int prompt_len, int seed, int max_tokens) {
  PreparedRequest r;
  for (int i = 0; i < prompt_len; ++i) r.prompt_ids.push_back(TokenId((seed * 131 + i * 37 + 11) % 400));
  r.options.max_new_tokens = max_tokens;
  r.options.stop_at_eos = false;
  return r;
}

struct Outcome {
  std::string text;
  std::vector<TokenLogprob> logprobs;
  JobResult result;
};

Outcome drain(Job& job) {
  Outcome o;
  for (;;) {
    Job::Update u = job.wait_update();
    o.text += u.text;
    std::move(u.logprobs.begin(), u.logprobs.end(), std::back_inserter(o.logprobs));
    if (u.result) {
      o.result = *u.result;
      return o;
    }
  }
}

// The requests queued at once, then the scheduler runs until the queue is empty.
std::vector<Outcome> run_batched(const Model& model, ThreadPool& pool, const std::vector<PreparedRequest>& requests,
                                 const SchedulerOptions& options, const Config& knobs, Metrics& metrics,
                                 const std::vector<bool>& cancel = {}) {
  JobQueue queue(64);
  std::vector<std::shared_ptr<Job>> jobs;
  for (size_t i = 0; i < requests.size(); ++i) {
    jobs.push_back(std::make_shared<Job>(requests[i], 0));
    if (i < cancel.size() && cancel[i]) jobs.back()->cancel();
    EXPECT_TRUE(queue.try_push(jobs.back()));
  }
  queue.close();
  auto scheduler = BatchScheduler::create(model, pool, options, queue, metrics, knobs);
  EXPECT_TRUE(scheduler.has_value()) << (scheduler ? "" : scheduler.error().message());
  if (!scheduler) return {};
  (*scheduler)->run();
  std::vector<Outcome> out;
  for (auto& j : jobs) out.push_back(drain(*j));
  return out;
}

double sched_metric(const std::string& page, const std::string& name) {
  const size_t at = page.find("\n" + name + " ");
  EXPECT_NE(at, std::string::npos) << name;
  return at == std::string::npos ? -1 : std::stod(page.substr(at + name.size() + 2));
}

std::string alone(const Model& model, ThreadPool& pool, const PreparedRequest& r) {
  std::string text;
  auto stats = generate_from_ids(model, pool, r.prompt_ids, r.options, [&](std::string_view p) {
    text += p;
    return true;
  });
  EXPECT_TRUE(stats.has_value());
  EXPECT_FALSE(text.empty());
  return text;
}

class BatchSchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = ThreadPool::create({.threads = 1, .pin = false});
    ASSERT_TRUE(p.has_value());
    pool = std::move(*p);
  }
  SchedTinyModel t = sched_tiny_model();
  std::unique_ptr<ThreadPool> pool;
  Metrics metrics;
};

TEST_F(BatchSchedulerTest, GreedyBatchedEqualsAloneWithChunkedPrefill) {
  // Prompts of 3..41 tokens with 8 tokens per forward: the long ones prefill in chunks that
  // share forwards with the short ones' decode tokens.
  std::vector<PreparedRequest> reqs = {greedy_request(3, 1, 10), greedy_request(17, 2, 10), greedy_request(41, 3, 10),
                                       greedy_request(9, 4, 6), greedy_request(1, 5, 10)};
  auto out = run_batched(*t.model, *pool, reqs, {.max_sequences = 4, .max_batch_tokens = 8}, Config(), metrics);
  ASSERT_EQ(out.size(), reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(out[i].text, alone(*t.model, *pool, reqs[i])) << "request " << i;
    EXPECT_EQ(out[i].result.prompt_tokens, int(reqs[i].prompt_ids.size()));
    EXPECT_EQ(out[i].result.completion_tokens, reqs[i].options.max_new_tokens);
    EXPECT_EQ(out[i].result.finish_reason, "length");
  }
  // No forward above the 8-token budget, and more forwards than requests (prefill chunks).
  const std::string page = metrics.render(0, 64);
  const double forwards = sched_metric(page, "recur_batch_forwards_total");
  EXPECT_EQ(sched_metric(page, "recur_batch_forward_tokens_bucket{le=\"8\"}"), forwards) << page;
  EXPECT_GT(forwards, 10.0);
  EXPECT_EQ(sched_metric(page, "recur_batch_forward_tokens_count"), forwards);
  EXPECT_EQ(metrics.running().load(), 0);
}

TEST_F(BatchSchedulerTest, StopSequenceAndMaxTokensPerRequest) {
  PreparedRequest a = greedy_request(5, 6, 12);
  const std::string full = alone(*t.model, *pool, a);
  ASSERT_GE(full.size(), 4u);
  a.stop = {full.substr(full.size() / 2, 2)};
  const std::string until_stop = full.substr(0, full.find(a.stop[0]));
  PreparedRequest b = greedy_request(7, 7, 3);
  auto out = run_batched(*t.model, *pool, {a, b, greedy_request(4, 8, 12)}, {.max_sequences = 3, .max_batch_tokens = 16},
                         Config(), metrics, {false, false, true});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].text, until_stop);
  EXPECT_EQ(out[0].result.finish_reason, "stop");
  EXPECT_EQ(out[1].result.completion_tokens, 3);
  EXPECT_EQ(out[1].result.finish_reason, "length");
  EXPECT_EQ(out[1].text, alone(*t.model, *pool, b));
  EXPECT_EQ(out[2].result.finish_reason, "cancelled") << "cancelled while queued: never run";
  EXPECT_EQ(out[2].result.completion_tokens, 0);
}

TEST_F(BatchSchedulerTest, RequestsWaitForKvPagesAndOneThatNeverFitsFails) {
  // 4 pages of 16 tokens: one request of 20 + 20 tokens (3 pages) at a time.
  Config knobs;
  ASSERT_TRUE(knobs.set("engine.hybrid.kv_pages", "4").has_value());
  std::vector<PreparedRequest> reqs = {greedy_request(20, 9, 20), greedy_request(20, 10, 20),
                                       greedy_request(60, 11, 20)};
  auto out = run_batched(*t.model, *pool, reqs, {.max_sequences = 4, .max_batch_tokens = 32}, knobs, metrics);
  ASSERT_EQ(out.size(), 3u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(out[size_t(i)].text, alone(*t.model, *pool, reqs[size_t(i)])) << i;
    EXPECT_EQ(out[size_t(i)].result.completion_tokens, 20);
  }
  ASSERT_TRUE(out[2].result.error.has_value());
  EXPECT_EQ(out[2].result.error->http_status, 500);
  EXPECT_NE(out[2].result.error->message.find("KV pages"), std::string::npos) << out[2].result.error->message;
  EXPECT_NE(metrics.render(0, 64).find("recur_kv_pages_total 4\n"), std::string::npos);
}

// SchedulerOptions::import_prompt (the disaggregated decode worker): each prompt is prefilled in
// a batch of its own, its state exported and installed into the scheduler's fresh sequence, as
// a prefill worker's transfer would; the requests then decode together and give the tokens each
// gives alone. An import that fails fails its request only.
TEST_F(BatchSchedulerTest, ImportedPromptsDecodeTogetherAsAlone) {
  const Model& model = *t.model;
  ThreadPool& p = *pool;
  PromptImport prefill_elsewhere = [&model, &p](Job& job, Batch& batch, SeqId seq) -> Result<std::vector<float>> {
    const std::vector<TokenId>& ids = job.request().prompt_ids;
    if (ids.size() == 2) return internal_error("test: the transfer of a 2-token prompt failed");
    const int context = model.config().context;
    RECUR_ASSIGN_OR_RETURN(std::unique_ptr<Batch> own,
                           model.new_batch(p, {.max_sequences = 1, .max_tokens = context, .max_batch_tokens = context},
                                           Config()));
    RECUR_ASSIGN_OR_RETURN(SeqId from, own->add_sequence());
    std::vector<BatchToken> rows;
    for (size_t i = 0; i < ids.size(); ++i) rows.push_back({.seq = from, .token = ids[i], .want_logits = i + 1 == ids.size()});
    RECUR_ASSIGN_OR_RETURN(std::span<const float> logits, own->forward(rows));
    std::vector<float> last(logits.begin(), logits.end());
    for (int l = 0; l < model.config().n_layers; ++l) {
      RECUR_ASSIGN_OR_RETURN(size_t n, layer_state_bytes(*own, from, l));
      std::vector<std::byte> block(n);
      RECUR_RETURN_IF_ERROR(export_layer_state(*own, from, l, block));
      RECUR_RETURN_IF_ERROR(import_layer_state(batch, seq, l, block));
    }
    RECUR_RETURN_IF_ERROR(set_sequence_position(batch, seq, int(ids.size())));
    return last;
  };
  std::vector<PreparedRequest> reqs = {greedy_request(5, 12, 12), greedy_request(19, 13, 12), greedy_request(2, 14, 12),
                                       greedy_request(33, 15, 1)};
  auto out = run_batched(model, p, reqs, {.max_sequences = 4, .max_batch_tokens = 8, .import_prompt = prefill_elsewhere},
                         Config(), metrics);
  ASSERT_EQ(out.size(), reqs.size());
  for (size_t i : {0u, 1u, 3u}) {
    EXPECT_EQ(out[i].text, alone(model, p, reqs[i])) << "request " << i;
    EXPECT_EQ(out[i].result.completion_tokens, reqs[i].options.max_new_tokens) << i;
  }
  ASSERT_TRUE(out[2].result.error.has_value());
  EXPECT_NE(out[2].result.error->message.find("2-token prompt"), std::string::npos) << out[2].result.error->message;
  // Only decode tokens in the forwards (the prompts came in whole), two sequences in each.
  const std::string page = metrics.render(0, 64);
  EXPECT_EQ(sched_metric(page, "recur_batch_forward_tokens_sum"), 2 * 11.0) << page;
  EXPECT_EQ(sched_metric(page, "recur_batch_forward_tokens_bucket{le=\"1\"}"), 0.0) << page;
  EXPECT_EQ(metrics.running().load(), 0);
}

// Log-softmax of one logits row in long double: the reference the server's logprobs are checked against.
std::vector<double> reference_log_softmax(std::span<const float> logits) {
  long double total = 0;
  for (float l : logits) total += std::exp((long double)l);
  std::vector<double> out;
  for (float l : logits) out.push_back(double((long double)l - std::log(total)));
  return out;
}

TEST_F(BatchSchedulerTest, LogprobsEqualASessionsTeacherForcedLogSoftmax) {
  const Model& model = *t.model;
  PreparedRequest scored = greedy_request(13, 21, 5);
  scored.logprobs = 3;
  scored.prompt_logprobs = true;
  const PreparedRequest plain = greedy_request(7, 22, 5);
  // Chunked prefill (8 tokens a forward) mixed with the other request's decode.
  auto out = run_batched(model, *pool, {scored, plain}, {.max_sequences = 2, .max_batch_tokens = 8}, Config(), metrics);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[1].logprobs.empty());
  EXPECT_EQ(out[1].text, alone(model, *pool, plain));
  const auto& lp = out[0].logprobs;
  ASSERT_EQ(lp.size(), 13u + 5u);
  // The echoed prompt: nothing predicts its first token; its entries read as the decoded prompt.
  EXPECT_FALSE(lp[0].logprob.has_value());
  std::string prompt_text;
  for (size_t i = 0; i < 13; ++i) prompt_text += lp[i].token;
  EXPECT_EQ(prompt_text, model.tokenizer().decode(scored.prompt_ids));
  // Teacher forcing through a session: each position's logits score the next prompt token, then
  // the greedy continuation.
  auto session = model.new_session(*pool, 128, Config());
  ASSERT_TRUE(session.has_value());
  std::string generated;
  TokenId next = scored.prompt_ids[0];
  for (size_t i = 0; i + 1 < lp.size(); ++i) {
    auto logits = (*session)->step(next);
    ASSERT_TRUE(logits.has_value());
    const std::vector<double> ref = reference_log_softmax(*logits);
    next = i + 1 < 13 ? scored.prompt_ids[i + 1] : argmax(*logits);
    const TokenLogprob& e = lp[i + 1];
    ASSERT_TRUE(e.logprob.has_value()) << i;
    EXPECT_NEAR(*e.logprob, ref[size_t(next)], 1e-3) << "position " << i + 1;
    ASSERT_EQ(e.top.size(), 3u);
    double mass = 0;
    for (size_t k = 0; k < e.top.size(); ++k) {
      mass += std::exp(e.top[k].second);
      if (k > 0) {
        EXPECT_GE(e.top[k - 1].second, e.top[k].second);
      }
    }
    EXPECT_LE(mass, 1.0 + 1e-6);
    EXPECT_NEAR(e.top[0].second, *std::max_element(ref.begin(), ref.end()), 1e-3);
    if (i + 1 >= 13) {  // greedy: the sampled token is the most likely one
      EXPECT_EQ(e.token, model.tokenizer().piece(next));
      EXPECT_NEAR(*e.logprob, e.top[0].second, 1e-6);
      generated += e.token;
    }
  }
  EXPECT_EQ(generated, out[0].text);
}

TEST_F(BatchSchedulerTest, EchoWithNoNewTokensScoresThePromptOnly) {
  PreparedRequest scored = greedy_request(6, 3, 0);
  scored.logprobs = 0;
  scored.prompt_logprobs = true;
  auto out = run_batched(*t.model, *pool, {scored}, {.max_sequences = 2, .max_batch_tokens = 4}, Config(), metrics);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].text, "");
  EXPECT_EQ(out[0].result.completion_tokens, 0);
  ASSERT_EQ(out[0].logprobs.size(), 6u);
  for (size_t i = 1; i < 6; ++i) {
    ASSERT_TRUE(out[0].logprobs[i].logprob.has_value());
    EXPECT_LE(*out[0].logprobs[i].logprob, 0.0);
    EXPECT_TRUE(out[0].logprobs[i].top.empty());
  }
}

TEST_F(BatchSchedulerTest, RejectsABatchTooSmallForItsSequences) {
  JobQueue queue(1);
  auto s = BatchScheduler::create(*t.model, *pool, {.max_sequences = 8, .max_batch_tokens = 4}, queue, metrics, Config());
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("--max-batch-tokens"), std::string::npos);
}

}  // namespace
}  // namespace recur::serve
