"""``topo moe`` on the command line: the paper example, a built MPFT, JSON, HTML, bad input."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from formats._real import real_file
from typer.testing import CliRunner

import topo
from topo.builders import build
from topo.cli import app
from topo.fabric import save

runner = CliRunner()
KEYS = ("dispatch_us", "combine_us", "layer_us", "tpot_ms", "tokens_per_s", "ib_bytes_per_gpu",
        "nodes_per_token")  # fmt: skip


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def mpft(tmp_path_factory):
    path = tmp_path_factory.mktemp("moe") / "mpft.json"
    save(build("mpft", switch_ports=16, gpus=64), path)
    return path


def test_paper_example_prints_the_derivation():
    r = run("moe", "--paper-example")
    assert r.exit_code == 0, r.output
    # By hand: (1 + 2) B x 32 x 9 x 7,000 = 6,048,000 B; / 50e9 B/s = 120.96 µs (7,168: 6,193,152
    # B, 123.86 µs); x 2 = 241.92 µs; x 61 = 14,757.12 µs; 1 / 14.75712 ms = 67.76 tokens/s.
    # NVL72: 6,048,000 B / 900e9 B/s = 6.72 µs; x 2 x 61 = 819.84 µs; 1 / 0.81984 ms = 1,219.75.
    for figure in ("6,048,000 B / 50 GB/s = 120.96 µs", "123.86 µs", "= 241.92 µs",
                   "= 14.76 ms TPOT", "67.76 tokens/s", "6.72 µs per step", "0.82 ms TPOT",
                   "1,220 tokens/s"):  # fmt: skip
        assert figure in r.output


def test_paper_example_json():
    r = run("moe", "--paper-example", "--json")
    d = json.loads(r.output)
    # (1 + 2) x 32 x 9 x 7,000 B at 50e9 B/s; x 2 micro-batches; x 61 layers.
    assert d["step_us"] == pytest.approx(3 * 32 * 9 * 7000 / 50e9 * 1e6)
    assert d["tpot_ms"] == pytest.approx(61 * 2 * 3 * 32 * 9 * 7000 / 50e9 * 1e3)


def test_moe_table_and_json(mpft):
    cfg = real_file("moe_configs", "deepseek-r1_hf_config.json")
    r = run("moe", mpft, "--model", cfg)
    assert r.exit_code == 0, r.output
    assert "EP64 (8 nodes x 8 GPUs) on mpft-64" in r.output
    assert "deepep, M=4" in r.output and "naive, unlimited" in r.output
    assert "node limit M=4 (DeepEP-style): nodes per token" in r.output
    j = run("moe", mpft, "--model", cfg, "--json", "--ep", 32, "--tokens-per-gpu", 16)
    d = json.loads(j.output)
    assert all(isinstance(d[k], float) for k in KEYS)
    # M = 4 cannot bind on 4 nodes: only unlimited scenarios.
    assert (d["ep"], d["nodes"], d["tokens_per_gpu"], d["node_limit"]) == (32, 4, 16, 4)
    assert d["node_limit_binds"] is False and d["node_limit_saving"] is None
    assert [s["node_limit"] for s in d["scenarios"]] == [0, 0]
    assert d["layer_us"] == pytest.approx(2 * (d["dispatch_us"] + d["combine_us"]))
    assert d["tpot_ms"] == pytest.approx(58 * d["layer_us"] / 1e3)
    assert d["nodes_per_token"] <= 4


def test_moe_html(mpft, tmp_path):
    out = tmp_path / "moe.html"
    r = run("moe", mpft, "--html", out, "--node-limit", 2, "--tokens-per-gpu", 8)
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert '"type":"heatmap"' in text and '"type":"bar"' in text
    assert "deepep, M=2" in text and "deepep, unlimited" in text


def test_mixtral_inside_one_node(mpft):
    r = run("moe", mpft, "--model", real_file("moe_configs", "mixtral-8x7b-v0.1_hf_config.json"),
            "--json")  # fmt: skip
    d = json.loads(r.output)
    # 8 experts -> EP8 in one server: nothing crosses the network.
    assert (d["ep"], d["nodes"], d["ib_bytes_per_gpu"], d["node_limit_saving"]) == (8, 1, 0.0, None)
    assert d["dispatch_bottleneck"] == "NVLink"


def one_line_error(r, match):
    assert r.exit_code == 1
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("topo: error: ") and match in lines[0], r.output


def test_errors(mpft, tmp_path):
    one_line_error(run("moe"), "give a FABRIC.json")
    llama = tmp_path / "llama.json"
    llama.write_text(json.dumps({"model_type": "llama", "hidden_size": 4096}))
    one_line_error(run("moe", mpft, "--model", llama), f"{llama}: not an MoE model")
    one_line_error(run("moe", mpft, "--ep", 12), "--ep 12 does not span whole servers of 8 GPUs")
    loads = tmp_path / "loads.txt"
    loads.write_text("1 2 3")
    one_line_error(run("moe", mpft, "--expert-load", loads),
                   f"{loads}: the expert-load vector has 3 entries; the model has 256")  # fmt: skip
    one_line_error(run("moe", mpft, "--expert-load", loads, "--zipf", 1), "not both")
    negative = tmp_path / "negative.txt"
    negative.write_text(" ".join(["-1"] + ["1"] * 255))
    one_line_error(run("moe", mpft, "--expert-load", negative),
                   f"{negative}: expert loads must be finite numbers >= 0")  # fmt: skip
    bad = tmp_path / "bad.txt"
    bad.write_text("1 x 3")
    one_line_error(run("moe", mpft, "--expert-load", bad), f"{bad}: expected numbers only")
    missing = tmp_path / "nope" / "m.html"
    one_line_error(run("moe", mpft, "--html", missing, "--tokens-per-gpu", 1), "does not exist")
    assert not missing.exists()


def test_a_kernel_on_ranks_without_a_driven_nic_says_how_many(mpft):
    # 8 servers of 8 GPUs, GPU i's NIC on plane i: planes 0-3 driven leave GPUs 4-7 of each
    # server, 32 of the 64 ranks, without a NIC (it said "the EP ranks' GPUs have no NIC")
    r = run("moe", mpft, "--ep", 64, "--tokens-per-gpu", 8, "--kernel", "deepep-ll",
            "--planes-used", 4)  # fmt: skip
    one_line_error(r, "kernel deepep-ll: 32 of the 64 EP ranks have no NIC to send over RDMA")


def test_memory_refusals_are_one_line_before_allocating(mpft, tmp_path, monkeypatch):
    """A million routed experts (the config validator's most) and the most tokens are refused
    in one line naming the options and the limit, quickly (nothing is allocated first)."""
    monkeypatch.delenv("TOPO_MEMORY_LIMIT_GB", raising=False)
    config = json.loads((Path(topo.__file__).parent / "data" / "deepseek-v3.json").read_text())
    config["n_routed_experts"] = 1_048_576
    big = tmp_path / "big.json"
    big.write_text(json.dumps(config))
    start = time.perf_counter()
    # 4 arrays x 8,192 tokens x 1,048,576 experts x 8 B = 274.88 GB
    one_line_error(run("moe", mpft, "--model", big, "--ep", 64, "--tokens-per-gpu", 128),
                   "gating --ep 64 x --tokens-per-gpu 128 = 8,192 tokens over 1,048,576 routed "
                   "experts (the model's n_routed_experts) takes 4 arrays of 8,192 x 1,048,576 "
                   "x 8 B, about 274.88 GB, over the memory limit of 4.29 GB "
                   "(TOPO_MEMORY_LIMIT_GB)")  # fmt: skip
    # 4,194,304 tokens x 9 destinations x 128 B = 4.83 GB
    one_line_error(run("moe", mpft, "--ep", 64, "--tokens-per-gpu", 65_536),
                   "--ep 64 x --tokens-per-gpu 65536 = 4,194,304 tokens")  # fmt: skip
    monkeypatch.setenv("TOPO_MEMORY_LIMIT_GB", "0.5")
    # 1,048,576 tokens x 9 x 128 B = 1.21 GB
    one_line_error(run("moe", mpft, "--ep", 16, "--tokens-per-gpu", 65_536),
                   "1.21 GB, over the memory limit of 0.50 GB (TOPO_MEMORY_LIMIT_GB)")  # fmt: skip
    assert time.perf_counter() - start < 30


def test_kernel_memory_refused_before_the_report(mpft, monkeypatch):
    """--kernel nccl on EP64 x 512 tokens needs 32,768 x (6 x 64 + 4 x 8) B = 13.6 MB; under a
    10 MB limit it is refused before any token is gated: at most floor(1e7 / 416) = 24,038."""
    import topo.moe.timing as timing

    def never(*args, **kwargs):
        raise AssertionError("gated before the memory guard")

    monkeypatch.setattr(timing, "route_tokens", never)
    monkeypatch.setenv("TOPO_MEMORY_LIMIT_GB", "0.01")
    one_line_error(run("moe", mpft, "--ep", 64, "--tokens-per-gpu", 512, "--kernel", "nccl"),
                   "--kernel nccl on --ep 64 x --tokens-per-gpu 512 = 32,768 tokens")  # fmt: skip
    r = run("moe", mpft, "--ep", 64, "--tokens-per-gpu", 512, "--kernel", "nccl")
    assert "at most 24,038 tokens fit" in r.output
