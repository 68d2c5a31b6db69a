"""MoE configs: the real files' keys read by hand, both key families, and every refusal."""

from __future__ import annotations

import json

import pytest
from formats._real import real_file

from topo.errors import FormatError
from topo.moe import config_from_dict, default_config, load_config

SHAPE = ("hidden_size", "n_routed_experts", "num_experts_per_tok", "n_shared_experts", "n_group",
         "topk_group", "num_hidden_layers", "moe_layers")  # fmt: skip


def shape(cfg):
    return tuple(getattr(cfg, k) for k in SHAPE)


# DeepSeek-V3/R1 as its config.json states it: 61 layers, the first 3 dense -> 58 MoE layers.
V3 = (7168, 256, 8, 1, 8, 4, 61, 58)


def test_deepseek_r1_config():
    cfg = load_config(real_file("moe_configs", "deepseek-r1_hf_config.json"))
    assert shape(cfg) == V3
    assert cfg.name == "deepseek_v3"
    assert cfg.default_node_limit == 4


def test_inference_format_maps_to_the_same_shape():
    # dim, n_activated_experts, n_expert_groups, n_limited_groups, n_layers, n_dense_layers.
    cfg = load_config(real_file("moe_configs", "deepseek-v3repo_inference_config_671B.json"))
    assert shape(cfg) == V3


def test_deepseek_v2_inference_config():
    # 160 routed + 2 shared, 6 active, 8 groups / 3 limited, 60 layers of which 1 dense.
    cfg = load_config(real_file("moe_configs", "deepseek-v3repo_inference_config_236B.json"))
    assert shape(cfg) == (5120, 160, 6, 2, 8, 3, 60, 59)


def test_mixtral_config():
    cfg = load_config(real_file("moe_configs", "mixtral-8x7b-v0.1_hf_config.json"))
    assert shape(cfg) == (4096, 8, 2, 0, 1, 1, 32, 32)
    assert cfg.default_node_limit == 0  # no groups: unlimited


def test_builtin_default_is_deepseek_v3():
    cfg = default_config()
    assert shape(cfg) == V3
    assert cfg.source == "built-in"


def test_qwen_moe_keys():
    # Qwen2-MoE: num_experts, a shared expert when shared_expert_intermediate_size > 0, and
    # layer i sparse when i not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0.
    d = dict(hidden_size=2048, num_experts=60, num_experts_per_tok=4, num_hidden_layers=24,
             shared_expert_intermediate_size=5632, decoder_sparse_step=2,
             mlp_only_layers=[1])  # fmt: skip
    cfg = config_from_dict(d)
    # Odd layers 1, 3, ..., 23 are sparse (12), less layer 1: 11.
    assert shape(cfg) == (2048, 60, 4, 1, 1, 1, 24, 11)


def test_text_config_is_read():
    cfg = config_from_dict({"model_type": "x", "text_config": {
        "hidden_size": 64, "num_local_experts": 4, "num_experts_per_tok": 1,
        "num_hidden_layers": 2}})  # fmt: skip
    assert cfg.n_routed_experts == 4 and cfg.moe_layers == 2


def write(tmp_path, data, name="config.json"):
    p = tmp_path / name
    p.write_text(json.dumps(data, indent=2) if not isinstance(data, str) else data)
    return p


BASE = dict(hidden_size=64, n_routed_experts=8, num_experts_per_tok=2, num_hidden_layers=4)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (dict(hidden_size=4096, num_hidden_layers=32, model_type="llama"),
         r"config.json: not an MoE model: none of the keys .*n_routed_experts.*llama"),
        ({k: v for k, v in BASE.items() if k != "num_experts_per_tok"},
         r"config.json: missing key 'num_experts_per_tok' or 'n_activated_experts'"),
        ({**BASE, "num_experts_per_tok": 9}, r"config.json:\d+: num_experts_per_tok: 9 experts"),
        ({**BASE, "hidden_size": -1}, r"config.json:\d+: hidden_size: must be an integer >= 1"),
        ({**BASE, "n_group": 3}, r"n_group: 8 routed experts do not split into 3"),
        ({**BASE, "n_group": 2, "topk_group": 3}, r"topk_group: 3 groups per token exceeds"),
        ({**BASE, "first_k_dense_replace": 4}, r"first_k_dense_replace: no MoE layer"),
        ({**BASE, "n_shared_experts": "one"}, r"n_shared_experts: must be an integer >= 0"),
        ("[1, 2]", r"config.json: expected a JSON object"),
        ("{not json", r"config.json:1:2: not JSON"),
    ],
)  # fmt: skip
def test_refusals_name_the_file_and_key(tmp_path, data, match):
    with pytest.raises(FormatError, match=match):
        load_config(write(tmp_path, data))


def test_error_gives_the_line_of_the_key(tmp_path):
    p = write(tmp_path, {**BASE, "num_experts_per_tok": 0})
    line = 1 + p.read_text().splitlines().index('  "num_experts_per_tok": 0,')
    with pytest.raises(FormatError) as exc:
        load_config(p)
    assert exc.value.line == line


def test_missing_file():
    with pytest.raises(FormatError, match="no such file"):
        load_config("/nonexistent/config.json")


def test_deepseek_v2_lite_inference_config():
    # 64 routed + 2 shared, 6 active, no expert groups, 27 layers of which 1 dense.
    cfg = load_config(real_file("moe_configs", "deepseek-v3repo_inference_config_16B.json"))
    assert shape(cfg) == (2048, 64, 6, 2, 1, 1, 27, 26)
    assert cfg.name == "deepseek-v3repo_inference_config_16B"  # no model_type: the file name


# -- issue 11: absurd and oversized numbers are refused, naming file and line ----------------


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"hidden_size": 64, "n_routed_experts": 8, "num_experts_per_tok": 2,\n'
         ' "num_hidden_layers": ' + "9" * 5000 + "}",
         r"config.json:2: a number of 5,000 digits: numbers in input files have at most 100"),
        ('{"hidden_size": 64, "n_routed_experts": 8, "num_experts_per_tok": 2,\n'
         ' "num_hidden_layers": 1000000000000000000000}',
         r"config.json:2: num_hidden_layers: must be at most 1,048,576, got 1e\+21 "
         r"\(an integer of 22 digits\)$"),
        ('{"hidden_size": 1e999, "n_routed_experts": 8, "num_experts_per_tok": 2,'
         ' "num_hidden_layers": 4}',
         r"config.json:1: hidden_size: must be an integer >= 1, got inf$"),
        ('{"hidden_size": NaN, "n_routed_experts": 8, "num_experts_per_tok": 2,'
         ' "num_hidden_layers": 4}',
         r"config.json:1: hidden_size: must be an integer >= 1, got nan$"),
        ('{"hidden_size": 64, "n_routed_experts": 8, "num_experts_per_tok": 2,'
         ' "num_hidden_layers": 4, "moe_layer_freq": 99999999}',
         r"config.json:1: moe_layer_freq: must be at most 1,048,576, got 99999999$"),
    ],
)  # fmt: skip
def test_absurd_numbers_are_refused(tmp_path, text, match):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(FormatError, match=match):
        load_config(path)
