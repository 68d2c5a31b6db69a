"""``topo codesign``: its design rebuilt by ``topo build``, priced by ``topo cost`` and timed by
``topo moe`` gives its numbers; the cheapest fabric wins; the same on two workers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from topo.cli import app
from topo.engine import Engine, SerialEngine
from topo.engine.codesign import build_args, codesign, ep_sizes
from topo.errors import InfeasibleError, TopoError
from topo.moe import default_config, load_config

runner = CliRunner()
REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "real" / "moe_configs"
MODEL = REAL / "deepseek-r1_hf_config.json"

# 32 GPUs (4 servers of 8) on 8-port switches: an MPFT is one leaf per plane (8 switches, no
# switch-to-switch cable), an FT2 adds spines: the MPFT is the cheaper for the same TPOT.
SEARCH = ["--gpus", "32", "--switch-ports", "8", "--families", "ft2,mpft"]
SEARCH += ["--oversubscription", "1", "--ep", "16,32", "--node-limit", "0,2"]


def cli(*args: Any) -> Any:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r


def test_the_design_reproduces_with_build_cost_and_moe(
    tmp_path: Path, local_engine: Engine
) -> None:
    if not MODEL.exists():
        pytest.skip(f"{MODEL} is not here")
    r = cli(
        "codesign",
        *SEARCH,
        "--tpot-ms",
        100,
        "--model",
        MODEL,
        "--json",
        "--scheduler",
        local_engine.address,
    )
    result = json.loads(r.stdout)
    d = result["design"]
    assert d["family"] == "mpft" and (d["switches"], d["links"]) == (8, 0)
    # 2 fabrics; EP 16 (2 servers: M=2 cannot bind, skipped) and EP 32 with M = 0, 2
    assert (result["fabrics"], result["evaluated"]) == (2, 6)
    fabric = tmp_path / "design.json"
    cli("build", *d["build_args"], "-o", fabric)
    cost = json.loads(cli("cost", fabric, "--json").stdout)
    moe = json.loads(cli("moe", fabric, *d["moe_args"], "--json").stdout)
    assert cost["cost_usd"] == d["cost_usd"]
    assert (moe["ep"], moe["node_limit"], moe["tpot_ms"]) == (
        d["ep"],
        d["node_limit"],
        d["tpot_ms"],
    )
    assert d["moe_args"][d["moe_args"].index("--model") + 1] == str(MODEL)
    # the runner-up is the FT2, dearer; its own best design meets the target too
    (up,) = result["runners_up"]
    assert up["family"] == "ft2" and up["cost_usd"] > d["cost_usd"] and up["tpot_ms"] <= 100


def test_serial_and_two_workers_agree(local_engine: Engine) -> None:
    config = default_config()
    kw: dict[str, Any] = dict(
        families=["ft2", "mpft"],
        grid={"switch_ports": [8], "oversubscription": [1.0]},
        eps=[16, 32],
        node_limits=[0, 2],
    )
    a = codesign(config, 32, 100.0, SerialEngine(), **kw)
    b = codesign(config, 32, 100.0, local_engine, **kw)
    assert a == b
    # a target at the design's own TPOT keeps it (at most), and fewer designs meet it
    tight = codesign(config, 32, a.design.tpot_ms, SerialEngine(), **kw)
    assert tight.design.tpot_ms <= a.design.tpot_ms and tight.feasible <= a.feasible


def test_no_design_meets_an_impossible_target() -> None:
    with pytest.raises(InfeasibleError, match=r"no design meets tpot_ms 0.001: the fastest is"):
        codesign(
            default_config(),
            32,
            0.001,
            SerialEngine(),
            families=["mpft"],
            grid={"switch_ports": [8]},
            eps=[32],
            node_limits=[0],
        )
    with pytest.raises(TopoError, match="tpot_ms must be > 0"):
        codesign(default_config(), 32, 0.0, SerialEngine())


def test_search_space_by_hand() -> None:
    # DeepSeek-V3: 256 routed experts; whole 8-GPU servers dividing 256, up to 64 GPUs
    assert ep_sizes(default_config(), 64, 8) == [8, 16, 32, 64]
    assert build_args("ft2", {"switch_ports": 64, "oversubscription": 3.0, "gpus": None}) == [
        "ft2",
        "--switch-ports",
        "64",
        "--oversubscription",
        "3",
    ]
    if MODEL.exists():  # DeepSeek-R1's config: the same 256 routed experts
        assert ep_sizes(load_config(MODEL), 32, 8) == [8, 16, 32]
