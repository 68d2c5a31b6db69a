"""MoE model configurations: Hugging Face ``config.json`` files and DeepSeek's inference format.

Only the keys that shape expert-parallel traffic are read: the hidden size (bytes per token),
the routed experts and how many each token picks, the shared experts, the expert groups and how
many groups a token may use (node-limited routing), and which layers are MoE layers (a decode
step crosses each of them once).

Key names by family (the first one present wins):

================================  ===============================================================
quantity                          keys
================================  ===============================================================
hidden size                       ``hidden_size`` (HF), ``dim`` (DeepSeek inference format)
routed experts                    ``n_routed_experts`` (DeepSeek), ``num_local_experts``
                                  (Mixtral), ``num_experts`` (Qwen-MoE)
experts per token                 ``num_experts_per_tok``, ``n_activated_experts``
shared experts                    ``n_shared_experts``; Qwen2-MoE: 1 if
                                  ``shared_expert_intermediate_size`` > 0; otherwise 0
expert groups                     ``n_group``, ``n_expert_groups`` (default 1: no groups)
groups per token                  ``topk_group``, ``n_limited_groups`` (default: all groups)
layers                            ``num_hidden_layers``, ``n_layers``
leading dense layers              ``first_k_dense_replace``, ``n_dense_layers`` (default 0)
MoE layer spacing                 ``moe_layer_freq`` (DeepSeek, default 1); Qwen-MoE:
                                  ``decoder_sparse_step`` (default 1), ``mlp_only_layers``
================================  ===============================================================

A config nested under ``text_config`` (multimodal models) is read from there.

References
----------
DeepSeek-AI, ``modeling_deepseek.py`` of the DeepSeek-V3 / R1 Hugging Face repositories
(``DeepseekV3DecoderLayer``: layer ``i`` is an MoE layer when ``i >= first_k_dense_replace``
and ``i % moe_layer_freq == 0``). Hugging Face transformers ``Qwen2MoeDecoderLayer`` (layer
``i`` is sparse when ``i not in mlp_only_layers`` and ``(i + 1) % decoder_sparse_step == 0``)
and ``MixtralConfig``. DeepSeek-V3 repository ``inference/configs/*.json`` (``dim``,
``n_activated_experts``, ``n_expert_groups``, ``n_limited_groups``, ``n_dense_layers``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from topo.errors import FormatError
from topo.files import parse_json, read_text
from topo.wording import shown

__all__ = ["MoEConfig", "default_config", "load_config", "config_from_dict"]

DEFAULT_CONFIG_FILE = "deepseek-v3.json"
"""The built-in model (``topo/data/deepseek-v3.json``): DeepSeek-V3's MoE shape."""


@dataclass(frozen=True)
class MoEConfig:
    """The parts of an MoE model that set its expert-parallel traffic.

    Attributes
    ----------
    name : str
        ``model_type`` of the config, or the file's stem.
    hidden_size : int
        Elements per token activation (DeepSeek-V3: 7,168).
    n_routed_experts : int
        Routed experts per MoE layer (DeepSeek-V3: 256).
    num_experts_per_tok : int
        Routed experts each token picks, ``k`` (DeepSeek-V3: 8).
    n_shared_experts : int
        Shared experts every token uses (DeepSeek-V3: 1; Mixtral: 0).
    n_group, topk_group : int
        Expert groups and how many of them a token may use (DeepSeek-V3: 8 and 4; 1 and 1 when
        the model has no groups).
    num_hidden_layers : int
        Transformer layers (DeepSeek-V3: 61).
    moe_layers : int
        Layers with an MoE block (DeepSeek-V3: 58; the first 3 are dense).
    source : str
        Where the config came from (a path, or ``built-in``).
    """

    name: str
    hidden_size: int
    n_routed_experts: int
    num_experts_per_tok: int
    n_shared_experts: int
    n_group: int
    topk_group: int
    num_hidden_layers: int
    moe_layers: int
    source: str = "built-in"

    @property
    def default_node_limit(self) -> int:
        """Nodes a token may reach by default: ``topk_group`` when the model has groups, else 0
        (unlimited)."""
        return self.topk_group if self.n_group > 1 else 0

    def to_dict(self) -> dict[str, Any]:
        """The config as a JSON-ready dict."""
        return asdict(self)


_KEYS: dict[str, tuple[str, ...]] = {
    "hidden_size": ("hidden_size", "dim"),
    "n_routed_experts": ("n_routed_experts", "num_local_experts", "num_experts"),
    "num_experts_per_tok": ("num_experts_per_tok", "n_activated_experts"),
    "num_hidden_layers": ("num_hidden_layers", "n_layers"),
    "n_group": ("n_group", "n_expert_groups"),
    "topk_group": ("topk_group", "n_limited_groups"),
    "first_k_dense_replace": ("first_k_dense_replace", "n_dense_layers"),
}


MAX_VALUE = 1 << 20
"""Largest value accepted for any integer setting of a model config (hidden size, experts,
layers, groups: the largest published MoE models stay below 2^16 in each)."""


def load_config(path: str | Path) -> MoEConfig:
    """Read an MoE model config (Hugging Face ``config.json`` or DeepSeek's inference format).

    Parameters
    ----------
    path : str or Path
        A JSON file, e.g. DeepSeek-R1's ``config.json`` or ``mixtral-8x7b`` 's.

    Returns
    -------
    MoEConfig

    Raises
    ------
    FormatError
        The file is missing or not a JSON object; it is not an MoE model (no routed-expert
        key); a needed key is missing; a value is not a positive integer or breaks a limit
        (``k`` above the routed experts, ``topk_group`` above ``n_group``, experts not divisible
        into the groups). The message names the file, the key and, when known, its line.

    Examples
    --------
    >>> cfg = load_config("config.json")                       # doctest: +SKIP
    >>> cfg.n_routed_experts, cfg.num_experts_per_tok, cfg.moe_layers   # doctest: +SKIP
    (256, 8, 58)
    """
    path = Path(path)
    text = read_text(path)
    data = parse_json(path, text)
    if not isinstance(data, dict):
        raise FormatError(path, "expected a JSON object of model settings (a config.json)")
    cfg = config_from_dict(data, source=str(path), text=text)
    return cfg if cfg.name else replace(cfg, name=path.stem)


def default_config() -> MoEConfig:
    """The built-in model: DeepSeek-V3 (hidden 7,168; 256 routed experts, 8 per token, 1 shared;
    8 groups, 4 per token; 61 layers, the first 3 dense).

    References
    ----------
    DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv 2412.19437, §2.1.2 and §4.2; the
    DeepSeek-V3 ``config.json``.
    """
    text = resources.files("topo").joinpath("data").joinpath(DEFAULT_CONFIG_FILE).read_text("utf-8")
    return config_from_dict(json.loads(text), source="built-in", text=text)


def config_from_dict(data: dict[str, Any], *, source: str = "<dict>", text: str = "") -> MoEConfig:
    """Build an :class:`MoEConfig` from a parsed config dict (see :func:`load_config`).

    ``source`` names the file in error messages; ``text`` (the file's text) lets them give the
    key's line.
    """
    if isinstance(data.get("text_config"), dict) and not _has(data, "n_routed_experts"):
        data = data["text_config"]

    def fail(key: str, message: str) -> FormatError:
        return FormatError(source, f"{key}: {message}", line=_line_of(text, key))

    def get(quantity: str, default: int | None = None, minimum: int = 1) -> tuple[str, int]:
        for key in _KEYS[quantity]:
            if key in data and data[key] is not None:
                value = data[key]
                if not _int_at_least(value, minimum):
                    raise fail(key, f"must be an integer >= {minimum}, got {shown(value)}")
                if value > MAX_VALUE:
                    raise fail(key, f"must be at most {MAX_VALUE:,}, got {shown(value)}")
                return key, value
        if default is None:
            names = " or ".join(repr(k) for k in _KEYS[quantity])
            raise FormatError(source, f"missing key {names} ({quantity.replace('_', ' ')})")
        return _KEYS[quantity][0], default

    if not _has(data, "n_routed_experts"):
        names = ", ".join(repr(k) for k in _KEYS["n_routed_experts"])
        raise FormatError(
            source,
            f"not an MoE model: none of the keys {names} is present"
            + (f" (model_type {data['model_type']!r})" if "model_type" in data else ""),
        )
    _, hidden = get("hidden_size")
    e_key, experts = get("n_routed_experts")
    k_key, k = get("num_experts_per_tok")
    if k > experts:
        raise fail(k_key, f"{k} experts per token exceeds the {experts} routed experts ({e_key})")
    g_key, groups = get("n_group", default=1)
    if experts % groups:
        raise fail(g_key, f"{experts} routed experts do not split into {groups} equal groups")
    t_key, topk_group = get("topk_group", default=groups)
    if topk_group > groups:
        raise fail(t_key, f"{topk_group} groups per token exceeds the {groups} groups ({g_key})")
    _, layers = get("num_hidden_layers")
    d_key, dense = get("first_k_dense_replace", default=0, minimum=0)
    shared = _shared_experts(data, fail)
    moe_layers = _moe_layers(data, layers, dense, fail)
    if moe_layers == 0:
        raise fail(d_key, f"no MoE layer among the {layers} layers")
    return MoEConfig(
        name=str(data.get("model_type") or ""),
        hidden_size=hidden,
        n_routed_experts=experts,
        num_experts_per_tok=k,
        n_shared_experts=shared,
        n_group=groups,
        topk_group=topk_group,
        num_hidden_layers=layers,
        moe_layers=moe_layers,
        source=source,
    )


_Fail = Callable[[str, str], FormatError]
"""Builds the error for a bad key: ``fail(key, message)`` (the file and the key's line)."""


def _int_at_least(value: Any, minimum: int) -> bool:
    """True for an integer (not a bool) >= ``minimum``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _has(data: dict[str, Any], quantity: str) -> bool:
    return any(data.get(k) is not None for k in _KEYS[quantity])


def _shared_experts(data: dict[str, Any], fail: _Fail) -> int:
    if data.get("n_shared_experts") is not None:
        n = data["n_shared_experts"]
        if not _int_at_least(n, 0):
            raise fail("n_shared_experts", f"must be an integer >= 0, got {shown(n)}")
        if n > MAX_VALUE:
            raise fail("n_shared_experts", f"must be at most {MAX_VALUE:,}, got {shown(n)}")
        return n
    size = data.get("shared_expert_intermediate_size")
    if size is not None:
        if not _int_at_least(size, 0):
            raise fail(
                "shared_expert_intermediate_size", f"must be an integer >= 0, got {shown(size)}"
            )
        return 1 if size > 0 else 0
    return 0


def _moe_layers(data: dict[str, Any], layers: int, dense: int, fail: _Fail) -> int:
    """Count the MoE layers (DeepSeek and Qwen-MoE rules; every layer otherwise)."""
    spacing = {}
    for key in ("moe_layer_freq", "decoder_sparse_step"):  # absent or null: every layer
        value = 1 if data.get(key) is None else data[key]
        if not _int_at_least(value, 1):
            raise fail(key, f"must be an integer >= 1, got {shown(value)}")
        if value > MAX_VALUE:
            raise fail(key, f"must be at most {MAX_VALUE:,}, got {shown(value)}")
        spacing[key] = value
    freq, step = spacing["moe_layer_freq"], spacing["decoder_sparse_step"]
    mlp_only = data.get("mlp_only_layers") or []
    if not isinstance(mlp_only, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in mlp_only
    ):
        raise fail("mlp_only_layers", "must be a list of layer indices")
    only = set(mlp_only)
    return sum(
        1
        for i in range(layers)
        if i >= dense and i % freq == 0 and (i + 1) % step == 0 and i not in only
    )


def _line_of(text: str, key: str) -> int | None:
    """1-based line of the first ``"key":`` in ``text`` (None when not found)."""
    m = re.search(r'"' + re.escape(key) + r'"\s*:', text)
    return text.count("\n", 0, m.start()) + 1 if m else None
