"""The engine seam on real Dask clusters: the same numbers as in this process, the fabric
scattered once, a task that kills its worker retried once and then reported."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.engine import (
    Engine,
    SerialEngine,
    TaskOutcome,
    make_engine,
    slurm_arguments,
    task_seeds,
    trial_map,
)
from topo.engine.cluster import INTERRUPTED_CLOSE_S
from topo.errors import TopoError
from topo.fabric import save
from topo.flow.failures.resilience import damaged_bandwidth, resilience

runner = CliRunner()


def square(x: int) -> int:
    return x * x


def offset_square(base: int, x: int) -> int:
    return base + x * x


def die_on_three(x: int) -> int:
    if x == 3:
        os._exit(1)  # the worker process dies, as on an out-of-memory kill
    return x * x


def refuse_two(x: int) -> int:
    if x == 2:
        raise TopoError("two is refused")
    return x


@pytest.fixture(scope="module")
def mpft() -> Any:
    # 64 GPUs on 8-port switches: 16 servers x 4 GPUs, 4 planes
    return build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4, gpus=64)


def _timeless(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != "seconds"}


def test_map_returns_every_task_with_its_index(local_engine: Engine) -> None:
    assert local_engine.workers == 2
    got = sorted((o.index, o.value) for o in local_engine.map(square, list(range(10))))
    assert got == [(i, i * i) for i in range(10)]
    shared = local_engine.scatter(100)
    got = sorted((o.index, o.value) for o in local_engine.map(offset_square, [1, 2], shared))
    assert got == [(0, 101), (1, 104)]


def test_a_task_that_kills_its_worker_is_retried_once_then_reported(local_engine: Engine) -> None:
    done: list[int] = []
    outcomes = {
        o.index: o for o in local_engine.map(die_on_three, list(range(6)), progress=done.append)
    }
    assert sorted(outcomes) == list(range(6)) and done == list(range(1, 7))
    assert "KilledWorker" in outcomes[3].error and outcomes[3].value is None
    assert [o.error for i, o in outcomes.items() if i != 3] == [""] * 5
    assert {i: o.value for i, o in outcomes.items() if i != 3} == {0: 0, 1: 1, 2: 4, 4: 16, 5: 25}
    # the nannies restarted both killed workers: the engine goes on with two
    local_engine.client.wait_for_workers(2, timeout=60)
    assert sorted(o.value for o in local_engine.map(square, [7, 8])) == [49, 64]


def test_a_task_error_is_its_outcome_on_both_engines(local_engine: Engine) -> None:
    for engine in (SerialEngine(), local_engine):
        outcomes = sorted(engine.map(refuse_two, [1, 2, 3]), key=lambda o: o.index)
        assert [o.ok for o in outcomes] == [True, False, True]
        assert outcomes[1].error == "TopoError: two is refused"


def test_resilience_on_two_workers_equals_the_serial_run(mpft: Any, local_engine: Engine) -> None:
    args: dict[str, Any] = dict(trials=6, links=3, switches=1, seed=2)
    serial = resilience(mpft, **args)
    done: list[int] = []
    dist = resilience(mpft, **args, trial_map=trial_map(local_engine), progress=done.append)
    assert _timeless(dist.to_dict()) == _timeless(serial.to_dict())
    assert done == list(range(1, 7))
    # each trial is the one-off damaged run with its own seed
    for i in (0, 5):
        one = damaged_bandwidth(mpft, links=3, switches=1, seed=dist.trial_seeds[i])
        assert dist.busbw_GBps[i] == pytest.approx(one.report.alltoall_busbw_Bps / 1e9)


def test_resilience_cli_on_an_external_scheduler(
    mpft: Any, external_scheduler: str, tmp_path: Path
) -> None:
    path = tmp_path / "mpft.json"
    save(mpft, path)
    base = ["resilience", str(path), "--trials", "4", "--fail-links", "2", "--json"]
    serial = json.loads(runner.invoke(app, base).stdout)
    r = runner.invoke(app, [*base, "--scheduler", external_scheduler])
    assert r.exit_code == 0, r.output
    assert [_timeless(x) for x in json.loads(r.stdout)] == [_timeless(x) for x in serial]
    assert f"2 worker(s) at {external_scheduler}" in r.stderr


def test_external_scheduler_reports_a_killed_task(external_scheduler: str) -> None:
    with make_engine(scheduler=external_scheduler) as engine:
        outcomes = {o.index: o for o in engine.map(die_on_three, [2, 3, 4])}
    assert "KilledWorker" in outcomes[1].error
    assert (outcomes[0].value, outcomes[2].value) == (4, 16)


def test_bad_engine_options_are_one_line_errors() -> None:
    with pytest.raises(TopoError, match="scheduler must be an address like tcp://HOST:PORT"):
        make_engine(scheduler="localhost:8786")
    with pytest.raises(TopoError, match="give scheduler or cluster, not both"):
        make_engine(scheduler="tcp://127.0.0.1:1", cluster="local")
    with pytest.raises(TopoError, match="workers must be a whole number from 1 to .*, got 0"):
        Engine(workers=0)
    with pytest.raises(TopoError, match="does not answer"):
        make_engine(scheduler="tcp://127.0.0.1:9", timeout_s=1)


def test_serial_engine_outcomes_in_order() -> None:
    assert list(SerialEngine().map(square, [3, 4])) == [TaskOutcome(0, 9), TaskOutcome(1, 16)]


def test_slurm_jobs_hold_one_worker_each() -> None:
    assert slurm_arguments(queue="gpu", memory="8GiB") == {
        "queue": "gpu",
        "walltime": "01:00:00",
        "cores": 1,
        "memory": "8GiB",
        "processes": 1,
    }


def test_task_seeds_are_numpy_seedsequence_children() -> None:
    import numpy as np

    children = np.random.SeedSequence(11).spawn(4)
    assert task_seeds(11, 4) == [int(c.generate_state(1)[0]) for c in children]
    assert len(set(task_seeds(11, 100))) == 100
    with pytest.raises(TopoError, match="seed and task count must be >= 0"):
        task_seeds(-1, 2)


def test_an_interrupted_close_does_not_wait_on_a_request_left_pending() -> None:
    # a scatter cut short by SIGTERM leaves the scheduler's broadcast waiting on the killed
    # workers, and Dask's cluster close waits for it without end (timeout None); given a
    # timeout, Dask raises TimeoutError when it runs out
    engine = Engine(workers=1, memory_limit="1GiB")
    cluster = engine._cluster
    real_close = cluster.close
    asked: list[float | None] = []

    def close_waiting_on_the_broadcast(timeout: float | None = None) -> None:
        asked.append(timeout)
        if timeout is None:
            raise AssertionError("an interrupted close waited without a timeout")
        time.sleep(timeout)
        raise TimeoutError(f"timed out after {timeout} s.")

    cluster.close = close_waiting_on_the_broadcast
    try:
        start = time.perf_counter()
        engine.close(interrupted=True)
        seconds = time.perf_counter() - start
        assert asked == [INTERRUPTED_CLOSE_S]
        assert seconds < 2 * INTERRUPTED_CLOSE_S + 0.5
        assert not cluster.shutdown_on_close  # Dask's exit handler would wait 10 s on it
        assert engine._cluster is None
    finally:
        cluster.close = real_close
        real_close(timeout=5)
