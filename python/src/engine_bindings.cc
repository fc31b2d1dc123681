// recur.load -> Model (sessions, batches, generate, tokenizer) with numpy arrays for ids and
// logits. Long calls run through run_cpp (gil_guard.h): compute under python.release_gil.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "batch_handle.h"
#include "bindings.h"
#include "core/thread_pool.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "gil_guard.h"

namespace recur::py {
namespace {

using FloatArray = pb::array_t<float, pb::array::c_style>;
using IdArray = pb::array_t<TokenId, pb::array::c_style | pb::array::forcecast>;

FloatArray logits_array(std::span<const float> logits, size_t rows) {
  size_t vocab = rows > 0 ? logits.size() / rows : 0;
  FloatArray out({rows, vocab});
  std::copy(logits.begin(), logits.end(), out.mutable_data());
  return out;
}

// Generated text may end inside a UTF-8 sequence or hold bytes of random tokens: decoded with
// U+FFFD for what is not UTF-8, as the CLI's JSON output does.
pb::str text_of(const std::string& bytes) {
  return pb::reinterpret_steal<pb::str>(PyUnicode_DecodeUTF8(bytes.data(), pb::ssize_t(bytes.size()), "replace"));
}

std::vector<TokenId> ids_vector(const IdArray& ids) {
  if (ids.ndim() != 1) throw pb::value_error("token ids: expected a 1-D integer array");
  return std::vector<TokenId>(ids.data(), ids.data() + ids.size());
}

std::shared_ptr<PyModel> load_for_python(const std::string& path, int threads, const pb::dict& knobs, bool pin) {
  auto m = std::make_shared<PyModel>();
  m->knobs = global_knobs();
  for (auto [k, v] : knobs) set_knob_value(m->knobs, pb::str(k), pb::str(v));
  RECUR_PY_ZONE_LOC(loc, "py.load");
  auto model = run_cpp(&loc, GilPolicy::kWait, [&] { return load_model(path); });
  m->model = value_or_raise(std::move(model));
  m->pool = value_or_raise(ThreadPool::create({.threads = threads, .pin = pin}));
  return m;
}

pb::dict generate_for_python(const std::shared_ptr<PyModel>& m, const pb::object& prompt, int max_new_tokens,
                  float temperature, float top_p, uint64_t seed, bool stop_at_eos) {
  GenerateOptions options{.max_new_tokens = max_new_tokens,
                          .sampling = {.temperature = temperature, .top_p = top_p, .seed = seed},
                          .stop_at_eos = stop_at_eos};
  std::string text;
  RECUR_PY_ZONE_LOC(loc, "py.generate");
  // Both branches produce the stats in one expression (a default-constructed Result assigned
  // later trips g++ 12's -Wmaybe-uninitialized).
  const bool from_text = pb::isinstance<pb::str>(prompt);
  std::string prompt_text = from_text ? std::string(pb::str(prompt)) : std::string();
  std::vector<TokenId> ids = from_text ? std::vector<TokenId>() : ids_vector(prompt.cast<IdArray>());
  GenerateStats s = value_or_raise(run_cpp(&loc, GilPolicy::kCompute, [&] {
    return from_text ? recur::generate(*m->model, *m->pool, prompt_text, options,
                                       [&](std::string_view piece) { text += piece; }, m->knobs)
                     : generate_from_ids(*m->model, *m->pool, std::move(ids), options,
                                         [&](std::string_view piece) { text += piece; return true; }, m->knobs);
  }));
  pb::dict out;
  out["tokens"] = IdArray(pb::ssize_t(s.tokens.size()), s.tokens.data());
  out["text"] = text_of(text);
  out["prompt_tokens"] = s.prompt_tokens;
  out["generated_tokens"] = s.generated_tokens;
  out["prefill_s"] = s.prefill_s;
  out["decode_s"] = s.decode_s;
  out["prefill_tok_s"] = s.prefill_tok_s();
  out["decode_tok_s"] = s.decode_tok_s();
  return out;
}

pb::array batch_forward(PyBatch& b, const IdArray& seqs, const IdArray& tokens, const pb::object& want_logits) {
  if (seqs.ndim() != 1 || tokens.ndim() != 1 || seqs.size() != tokens.size()) {
    throw pb::value_error("Batch.forward: seqs and tokens must be 1-D arrays of the same length");
  }
  std::vector<BatchToken> batch(size_t(tokens.size()));
  std::vector<bool> want(batch.size(), true);
  if (!want_logits.is_none()) {
    auto w = want_logits.cast<pb::array_t<bool, pb::array::c_style | pb::array::forcecast>>();
    if (w.ndim() != 1 || w.size() != tokens.size()) {
      throw pb::value_error("Batch.forward: want_logits must be a 1-D bool array as long as tokens");
    }
    for (size_t i = 0; i < want.size(); ++i) want[i] = w.data()[i];
  }
  size_t rows = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i] = {.seq = seqs.data()[i], .token = tokens.data()[i], .want_logits = want[i]};
    rows += want[i] ? 1 : 0;
  }
  RECUR_PY_ZONE_LOC(loc, "py.forward");
  auto logits = run_cpp(&loc, GilPolicy::kCompute, [&] { return b.batch->forward(batch); });
  return logits_array(value_or_raise(std::move(logits)), rows);
}

}  // namespace

void bind_engine(pb::module_& m) {
  pb::class_<PyModel, std::shared_ptr<PyModel>>(m, "Model", "A loaded model (GGUF) with its thread pool")
      .def_property_readonly("vocab", [](const PyModel& p) { return p.model->config().vocab; })
      .def_property_readonly("layers", [](const PyModel& p) { return p.model->config().n_layers; })
      .def_property_readonly("dim", [](const PyModel& p) { return p.model->config().dim; })
      .def_property_readonly("context", [](const PyModel& p) { return p.model->config().context; })
      .def_property_readonly("threads", [](const PyModel& p) { return p.pool->size(); })
      .def_property_readonly("eos", [](const PyModel& p) { return p.model->tokenizer().vocabulary().eos; })
      .def("encode", [](const PyModel& p, const std::string& text, pb::object add_bos) {
             const Tokenizer& tok = p.model->tokenizer();
             bool bos = add_bos.is_none() ? tok.vocabulary().add_bos : add_bos.cast<bool>();
             std::vector<TokenId> ids = tok.encode(text, bos);
             return IdArray(pb::ssize_t(ids.size()), ids.data());
           }, pb::arg("text"), pb::arg("add_bos") = pb::none(),
           "Text to token ids (int32 array); add_bos defaults to the vocabulary's rule")
      .def("decode", [](const PyModel& p, const IdArray& ids) {
             return text_of(p.model->tokenizer().decode(ids_vector(ids)));
           }, pb::arg("ids"), "Token ids to text")
      .def("new_session", [](const std::shared_ptr<PyModel>& p, int max_tokens) {
             if (max_tokens <= 0) max_tokens = p->model->config().context;
             auto s = std::make_unique<PySession>();
             s->owner = p;
             s->session = value_or_raise(p->model->new_session(*p->pool, max_tokens, p->knobs));
             return s;
           }, pb::arg("max_tokens") = 0, "A fresh sequence of at most max_tokens tokens (0: the model's context)")
      .def("new_batch", [](const std::shared_ptr<PyModel>& p, int max_sequences, int max_tokens, int max_batch_tokens) {
             if (max_tokens <= 0) max_tokens = p->model->config().context;
             auto b = std::make_unique<PyBatch>();
             b->owner = p;
             BatchOptions options{.max_sequences = max_sequences, .max_tokens = max_tokens,
                                  .max_batch_tokens = max_batch_tokens};
             b->batch = value_or_raise(p->model->new_batch(*p->pool, options, p->knobs));
             return b;
           }, pb::arg("max_sequences") = 1, pb::arg("max_tokens") = 0, pb::arg("max_batch_tokens") = 512,
           "Several sequences advanced together (batched prefill and decode); max_tokens per sequence, 0: the context")
      .def("generate", &generate_for_python, pb::arg("prompt"), pb::arg("max_new_tokens") = 32, pb::arg("temperature") = 0.0f,
           pb::arg("top_p") = 1.0f, pb::arg("seed") = 0, pb::arg("stop_at_eos") = true,
           "Generates from a text prompt or an id array; a dict of tokens, text and timings");

  pb::class_<PySession>(m, "Session", "One sequence's state; one thread at a time")
      .def("prefill", [](PySession& s, const IdArray& ids) {
             std::vector<TokenId> v = ids_vector(ids);
             RECUR_PY_ZONE_LOC(loc, "py.prefill");
             auto logits = run_cpp(&loc, GilPolicy::kCompute, [&] { return s.session->prefill(v); });
             return logits_array(value_or_raise(std::move(logits)), 1).attr("reshape")(-1);
           }, pb::arg("ids"), "Appends the ids in one batched forward; logits (float32, vocab) for the next token")
      .def("decode", [](PySession& s, TokenId token) {
             RECUR_PY_ZONE_LOC(loc, "py.decode");
             auto logits = run_cpp(&loc, GilPolicy::kCompute, [&] { return s.session->step(token); });
             return logits_array(value_or_raise(std::move(logits)), 1).attr("reshape")(-1);
           }, pb::arg("token"), "Appends one token; logits for the next")
      .def_property_readonly("position", [](const PySession& s) { return s.session->position(); });

  pb::class_<PyBatch> batch(m, "Batch", "Sequences of different lengths in one forward; one thread at a time");
  batch.def("add_sequence", [](PyBatch& b) { return value_or_raise(b.batch->add_sequence()); })
      .def("free_sequence", [](PyBatch& b, SeqId seq) { check(b.batch->free_sequence(seq)); }, pb::arg("seq"))
      .def("position", [](const PyBatch& b, SeqId seq) { return b.batch->position(seq); }, pb::arg("seq"))
      .def("forward", &batch_forward, pb::arg("seqs"), pb::arg("tokens"), pb::arg("want_logits") = pb::none(),
           "One forward over (seq, token) pairs; logits rows (float32, [n, vocab]) for want_logits tokens (all by default)")
      .def("kv_usage", [](const PyBatch& b) {
        KvUsage u = b.batch->kv_usage();
        pb::dict d;
        d["pages_used"] = u.pages_used;
        d["pages_total"] = u.pages_total;
        d["bytes_total"] = u.bytes_total;
        return d;
      });
  bind_state(m, batch);

  m.def("load", &load_for_python, pb::arg("path"), pb::arg("threads") = 0, pb::arg("knobs") = pb::dict(), pb::arg("pin") = false,
        "Loads a GGUF model; threads 0 = every CPU; knobs {name: value} on top of recur.set_knob's");
}

}  // namespace recur::py
