"""``topo acceptance DESIGN -o KIT``: the scales, the commands, the expected curves and their
band, the scripts as bash and a real ``sbatch --test-only`` read them, the kit written whole or
not at all, and the twin."""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topo.acceptance import kit_scales, make_kit, write_kit
from topo.builders import build
from topo.cli import app
from topo.collective import collective_table
from topo.export.hostlist import hostlist_ranged
from topo.fabric import save
from topo.spec import load_spec

from ._slurm import _which, munged, require_slurm, slurmctld

ROOT = Path(__file__).resolve().parents[2]
H100 = ROOT / "examples" / "h100-10node.toml"
GIB = 1 << 30


@pytest.fixture(scope="module")
def h100(tmp_path_factory):
    """The ten H100 servers of examples/h100-10node.toml, saved; and its kit, written."""
    folder = tmp_path_factory.mktemp("h100")
    G = build(load_spec(H100).replace(name=None))
    design = folder / "h100.json"
    save(G, design)
    kit = make_kit(G)
    write_kit(kit, folder / "kit", design)
    return G, design, kit, folder / "kit"


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_server_scales_double_up_to_every_server(h100):
    G, _, _, _ = h100
    servers = [s for s in kit_scales(G) if s.kind == "servers"]
    # 10 servers of 8 GPUs: 1, 2, 4, 8, then all 10
    assert [s.name for s in servers] == ["1x8", "2x8", "4x8", "8x8", "10x8"]
    assert [s.ranks for s in servers] == [8, 16, 32, 64, 80]
    assert servers[-1].servers == tuple(range(10))


def test_ep_groups_follow_the_moe_layout(h100):
    """DeepSeek-V3's 256 routed experts on 80 GPUs: the largest EP of whole 8-GPU servers
    that divides 256 is 64 (8 servers; 80 does not divide 256): one group, node0 to node7."""
    _, _, kit, _ = h100
    ep = [t for t in kit.tests if t.kind == "ep"]
    assert kit.ep == 64
    assert [t.op for t in ep] == ["alltoall", "deepep_internode", "deepep_low_latency"]
    assert all(t.hosts == tuple(f"node{i}" for i in range(8)) for t in ep)
    internode = next(t for t in ep if t.op == "deepep_internode")
    # DeepSeek-V3: hidden 7168, 8 experts per token, 256 routed; 8 processes per node
    assert (
        "tests/test_internode.py --num-processes 8 --num-tokens 4096 --hidden 7168 "
        "--num-topk 8 --num-experts 256" in internode.mpirun
    )
    assert "-x MASTER_ADDR=node0" in internode.mpirun and "-x WORLD_SIZE=8" in internode.mpirun


def test_each_plane_alone_on_an_mpft():
    """An MPFT of 8-port switches, 4 NICs per server: 4 planes of k^2/2 = 32 endpoints, so
    32 servers; plane p alone is GPU p of every server with NIC p (rail p, plane p)."""
    G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    scales = kit_scales(G)
    servers = [s.name for s in scales if s.kind == "servers"]
    assert servers == ["1x4", "2x4", "4x4", "8x4", "16x4", "32x4"]
    planes = [s for s in scales if s.kind == "plane"]
    assert [s.name for s in planes] == ["plane0", "plane1", "plane2", "plane3"]
    for p, s in enumerate(planes):
        assert (s.gpus_per_node, s.local_gpu, s.ranks) == (1, p, 32)
        assert s.nccl_ib_hca == f"=mlx5_{p}:1:{p}:{p}"


def test_each_rail_alone_on_an_mrft():
    G = build("mrft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    rails = [s for s in kit_scales(G) if s.kind == "rail"]
    assert [s.name for s in rails] == ["rail0", "rail1", "rail2", "rail3"]
    assert [s.nccl_ib_hca for s in rails] == [f"=mlx5_{r}:1:{r}:0" for r in range(4)]


def test_nccl_tests_arguments(h100):
    """-b 8 for all_reduce; for all_gather, reduce_scatter, alltoall a float per rank rounded
    up to a power of two (16 ranks: 64 B; 80 ranks: 320 -> 512 B); -e 8G -f 2 -g 1 -n 20 -w 5."""
    _, _, kit, _ = h100
    cmd = {t.id: t.mpirun for t in kit.tests}
    tail = "-e 8G -f 2 -g 1 -n 20 -w 5 >"
    assert f'all_reduce_perf" -b 8 {tail}' in cmd["all_reduce.10x8"]
    assert f'all_gather_perf" -b 64 {tail}' in cmd["all_gather.2x8"]
    assert f'alltoall_perf" -b 512 {tail}' in cmd["alltoall.10x8"]
    assert "mpirun -np 80 --hostfile hosts/10x8.txt --map-by ppr:8:node" in cmd["alltoall.10x8"]


def test_scripts_carry_the_hosts_and_nccl_variables_of_the_exports(h100):
    """The hosts of topo export slurm, and NCCL_IB_HCA / NCCL_CROSS_NIC of topo export nccl."""
    _, _, _, folder = h100
    conf = (folder / "slurm" / "topology.conf").read_text()
    # 64-port leaves, 32 ports down: the 8 NICs of 4 servers per leaf
    assert "SwitchName=leaf0 Nodes=node[0-3]\n" in conf and "leaf2 Nodes=node[8-9]\n" in conf
    env = (folder / "nccl.env").read_text()
    hca = next(ln for ln in env.splitlines() if ln.startswith("export NCCL_IB_HCA="))
    script = (folder / "slurm" / "all_reduce.2x8.sbatch").read_text()
    assert hca in script
    assert "#SBATCH --nodes=2" in script and "#SBATCH --nodelist=node[0-1]" in script
    assert "#SBATCH --ntasks-per-node=8" in script
    assert (folder / "hosts" / "2x8.txt").read_text() == "node0 slots=8\nnode1 slots=8\n"


def test_manifest_lists_every_test(h100):
    _, _, kit, folder = h100
    m = json.loads((folder / "manifest.json").read_text())
    # 5 server scales x 4 ops + the EP group's alltoall and two DeepEP tests
    assert len(m["tests"]) == 5 * 4 + 3
    for t in m["tests"]:
        assert (folder / t["sbatch"]).is_file()
        assert t["log"] == f"logs/{t['id']}.log"
        assert t["hostlist"] == hostlist_ranged(t["hosts"])
        if t["tool"] == "nccl-tests":
            assert (folder / t["expected"]).is_file()
        else:
            assert t["expected"] is None
    assert m["tolerance"]["agree"] == pytest.approx(math.log(1.15))
    assert (folder / "design.json").read_bytes() == h100[1].read_bytes()


def test_expected_curve_is_topo_collectives_with_a_15_percent_band(h100):
    G, _, _, folder = h100
    curve = json.loads((folder / "expected" / "all_reduce.2x8.json").read_text())
    # 8 B to 8 GiB doubling: 2^3 .. 2^33, 31 sizes
    assert [r["size_bytes"] for r in curve["rows"]] == [1 << i for i in range(3, 34)]
    table = collective_table(G, "all_reduce", gpus=16, gpus_per_node=8, max_bytes=8 * GIB)
    for row, expected in zip(curve["rows"], table.rows, strict=True):
        assert row["busbw_GBps"] == pytest.approx(expected.busbw_GBps)
        assert row["time_us"] == pytest.approx(expected.time_us)
        assert row["busbw_low_GBps"] == pytest.approx(row["busbw_GBps"] / 1.15)
        assert row["busbw_high_GBps"] == pytest.approx(row["busbw_GBps"] * 1.15)


def test_scripts_pass_bash_n(h100):
    _, _, _, folder = h100
    scripts = [
        *sorted((folder / "slurm").glob("*.sbatch")),
        folder / "mpirun.sh",
        folder / "submit.sh",
    ]
    assert len(scripts) == 23 + 2
    for script in scripts:
        done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert done.returncode == 0, f"{script.name}: {done.stderr}"


def test_sbatch_test_only_accepts_every_batch_script(h100, tmp_path):
    """A real slurmctld with the kit's topology.conf and ten 8-GPU nodes (State=CLOUD: nodes
    a job may be placed on without a slurmd; FUTURE nodes are never allocated): each script's
    job is placed on the nodes its --nodelist names."""
    require_slurm()
    if shutil.which("sbatch") is None:
        pytest.skip("sbatch not installed (apt-get install slurm-client)")
    _, _, kit, folder = h100
    topology = (folder / "slurm" / "topology.conf").read_text()
    with (
        munged(tmp_path / "munge") as sock,
        slurmctld(
            tmp_path / "ctld", sock, "node[0-9] CPUs=64 Gres=gpu:8", topology,
            "GresTypes=gpu", state="CLOUD",
        ) as ctld,
    ):  # fmt: skip
        for t in kit.tests:
            done = subprocess.run(
                [_which("sbatch"), "--test-only", t.sbatch],
                cwd=folder, capture_output=True, text=True, env=ctld.env, timeout=60,
            )  # fmt: skip
            said = (done.stdout + done.stderr).strip()
            assert done.returncode == 0, f"{t.id}: {said}"
            assert f"on nodes {hostlist_ranged(t.hosts)} " in said, f"{t.id}: {said}"


def test_a_folder_that_holds_files_is_refused_in_one_line(h100, tmp_path):
    _, design, _, _ = h100
    folder = tmp_path / "kit"
    folder.mkdir()
    (folder / "mine.txt").write_text("keep me")
    result = run("acceptance", design, "-o", folder)
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and "--force" in result.output
    assert [p.name for p in folder.iterdir()] == ["mine.txt"]
    result = run("acceptance", design, "-o", folder, "--force", "--json")
    assert result.exit_code == 0, result.output
    assert not (folder / "mine.txt").exists() and (folder / "manifest.json").is_file()


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("target", ["empty", "missing"])
def test_a_symbolic_link_is_never_replaced_by_the_kit(h100, tmp_path, force, target):
    _, design, _, _ = h100
    real = tmp_path / "real"
    if target == "empty":
        real.mkdir()
    link = tmp_path / "kitlink"
    link.symlink_to(real)
    result = run("acceptance", design, "-o", link, *(["--force"] if force else []))
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and "symbolic link" in result.output
    assert link.is_symlink() and link.readlink() == real
    assert not real.exists() or list(real.iterdir()) == []


def test_a_kit_is_written_whole_or_not_at_all(h100, tmp_path, monkeypatch):
    G, design, kit, _ = h100
    import topo.acceptance.kit as kit_mod

    calls = []

    def failing(path, text):
        calls.append(path)
        if len(calls) == 5:
            raise OSError(28, "No space left on device")
        Path(path).write_text(text)

    monkeypatch.setattr(kit_mod, "write_atomic", failing)
    with pytest.raises(Exception, match="No space left"):
        write_kit(kit, tmp_path / "kit", design)
    assert list(tmp_path.iterdir()) == []  # neither the kit nor its temporary folder


def test_twin_is_the_expected_table_per_op_ranks_and_size(h100, tmp_path):
    G, design, kit, _ = h100
    out = tmp_path / "twin.csv"
    result = run("acceptance", design, "--twin", out)
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert list(rows[0]) == [
        "op", "ranks", "nodes", "gpus_per_node", "size_bytes", "time_us", "algbw_GBps",
        "busbw_GBps", "busbw_low_GBps", "busbw_high_GBps", "algorithm", "protocol",
    ]  # fmt: skip
    # all_reduce at 5 server scales (8 B to 8 GiB: 31 sizes each)
    assert sum(1 for r in rows if r["op"] == "all_reduce") == 5 * 31
    big = next(
        r
        for r in rows
        if (r["op"], r["ranks"], r["size_bytes"]) == ("all_reduce", "80", str(8 * GIB))
    )
    curve = json.loads(kit.files["expected/all_reduce.10x8.json"])
    assert float(big["busbw_GBps"]) == pytest.approx(curve["rows"][-1]["busbw_GBps"], rel=1e-5)
    j = tmp_path / "twin.json"
    assert run("acceptance", design, "--twin", j).exit_code == 0
    doc = json.loads(j.read_text())
    assert doc["columns"][:5] == ["op", "ranks", "nodes", "gpus_per_node", "size_bytes"]
    assert len(doc["rows"]) == len(rows)


def test_bad_options_are_one_line(h100, tmp_path):
    _, design, _, folder = h100
    for args, words in [
        ((design,), "give -o KIT"),
        ((design, "--twin", tmp_path / "t.txt"), ".csv or .json"),
        ((folder,), "a folder"),
        ((design, "--results", tmp_path), "--results needs the kit's folder"),
        ((folder, "--results", tmp_path, "-o", tmp_path / "k"), "-o:"),
    ]:
        result = run("acceptance", *args)
        assert result.exit_code != 0
        assert words in result.output and result.output.count("\n") == 1, result.output


@pytest.mark.slow
def test_the_16384_gpu_mpft_kit(tmp_path):
    """The README's MPFT (2,048 servers, 8 planes): 12 server scales, 8 planes alone, 64 EP
    groups of 256 GPUs (32 servers); written, its scripts bash-clean. The time is reported
    (benchmarks/bench_acceptance.py holds it to issue 37's 10 s)."""
    G = build("mpft", switch_ports=64, link_gbps=400)
    design = tmp_path / "mpft.json"
    save(G, design)
    t0 = time.process_time()
    kit = make_kit(G)
    write_kit(kit, tmp_path / "kit", design)
    spent = time.process_time() - t0
    scales = {t.scale: t.kind for t in kit.tests}
    assert sum(1 for k in scales.values() if k == "servers") == 12  # 1, 2, ..., 2048
    assert sum(1 for k in scales.values() if k == "plane") == 8
    assert sum(1 for k in scales.values() if k == "ep") == 2048 // 32
    assert len(kit.tests) == 12 * 4 + 8 * 2 + 64 * 3
    for script in [*(tmp_path / "kit" / "slurm").glob("*.sbatch"), tmp_path / "kit" / "mpirun.sh"]:
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    print(f"16,384-GPU kit: {spent:.1f} s CPU")
