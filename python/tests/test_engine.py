# The engine through the bindings: generate equals the CLI's greedy tokens, prefill/decode
# logits agree with each other, a batch agrees with sessions, the tokenizer round-trips.
import numpy as np
import pytest

import recur
from conftest import run_cli

PROMPT = "The quick brown fox"


@pytest.fixture(scope="module")
def model(tiny_model):
    return recur.load(tiny_model, threads=1)


def test_generate_equals_cli_greedy(model, tiny_model, recur_cli):
    expected = run_cli(recur_cli, "generate", "-m", tiny_model, "-p", PROMPT, "-n", "8", "--threads", "1", "--json")
    out = model.generate(PROMPT, max_new_tokens=8)
    assert list(out["tokens"]) == expected["tokens"]
    assert out["text"] == expected["text"]
    # From ids: the same tokens.
    ids = model.encode(PROMPT)
    assert list(model.generate(ids, max_new_tokens=8)["tokens"]) == expected["tokens"]


def test_prefill_logits_shape_finite_and_equal_to_decode(model):
    ids = model.encode(PROMPT)
    logits = model.new_session().prefill(ids)
    assert logits.shape == (model.vocab,) and logits.dtype == np.float32
    assert np.isfinite(logits).all()
    s = model.new_session()
    for t in ids:
        step = s.decode(int(t))
    assert s.position == len(ids)
    np.testing.assert_allclose(step, logits, rtol=1e-3, atol=1e-3)


def test_batch_decode_equals_sessions(model):
    prompts = [model.encode("one two three"), model.encode("a different, longer prompt here")]
    b = model.new_batch(max_sequences=2, max_tokens=64)
    seqs = [b.add_sequence(), b.add_sequence()]
    expected = []
    for seq, ids in zip(seqs, prompts):
        want = np.zeros(len(ids), dtype=bool)
        want[-1] = True
        rows = b.forward(np.full(len(ids), seq), ids, want)
        assert rows.shape == (1, model.vocab)
        s = model.new_session()
        np.testing.assert_allclose(rows[0], s.prefill(ids), rtol=1e-3, atol=1e-3)
        expected.append(s.decode(7))
    # One decode step for both sequences together.
    rows = b.forward(np.array(seqs), np.array([7, 7]))
    assert rows.shape == (2, model.vocab)
    for i in range(2):
        np.testing.assert_allclose(rows[i], expected[i], rtol=1e-3, atol=1e-3)
        assert b.position(seqs[i]) == len(prompts[i]) + 1
    b.free_sequence(seqs[0])


def test_tokenizer_round_trip(model):
    text = "Hello, world! ünïcode"
    assert model.decode(model.encode(text)) == text


def test_errors_name_the_input(tmp_path):
    missing = str(tmp_path / "missing.gguf")
    with pytest.raises(recur.Error, match="missing.gguf"):
        recur.load(missing)
    with pytest.raises(recur.Error, match="python.release_gil"):
        recur.set_knob("python.release_gil", "maybe")
