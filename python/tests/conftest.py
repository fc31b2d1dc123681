# Shared fixtures: the recur CLI (RECUR_CLI, set by run_tests.sh) and a tiny model it writes.
import json
import os
import subprocess

import pytest


@pytest.fixture(scope="session")
def recur_cli():
    cli = os.environ.get("RECUR_CLI")
    if not cli or not os.path.exists(cli):
        pytest.skip("RECUR_CLI does not name the recur binary (run through python/run_tests.sh)")
    return cli


def run_cli(cli, *args):
    """Runs the recur CLI and returns its stdout parsed as JSON."""
    out = subprocess.run([cli, *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="session")
def tiny_model(recur_cli, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("model") / "tiny.gguf")
    subprocess.run([recur_cli, "model", "new", path, "--arch", "llama", "--dim", "64", "--layers", "2",
                    "--heads", "4", "--kv-heads", "2", "--ffn", "128", "--vocab", "400", "--context", "512"],
                   check=True, capture_output=True)
    return path
