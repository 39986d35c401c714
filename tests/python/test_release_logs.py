"""Version profiles against real start-ups of releases other than the v0.19 calibration set.

tests/data/vllm_release_logs.json holds one entry per public start-up (URL, release and how it is
known, GPU, model, settings, the printed lines as the source quotes them). Each is planned with
``vllm_mem.plan(..., vllm_version=<release>)`` and every printed term is compared within the
tolerances below; a term the rules are known not to explain is listed in the entry with why, and
the test insists it still disagrees (so a fix moves it to the checked terms). The "checked"
markers of csrc/core/plan/vllm_versions.json and the rule table of docs/vllm_versions.md must name
exactly the logs that check each rule change.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import vllm_mem

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
LOGS_FILE = "tests/data/vllm_release_logs.json"
GiB = float(1 << 30)
LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"

#: Per-term tolerances (GiB). Printed figures carry 2 decimals (+-0.005), the GPU total too; the
#: weights are an exact count; the peak and non-torch terms are the version rules under test
#: (0.05 GiB is the bar the issue sets for multimodal peaks). The available memory is the total
#: less those terms, so its tolerance is their sum.
TOL_GIB = {"weights_gib": 0.02, "peak_activation_gib": 0.05, "non_torch_gib": 0.02, "available_kv_cache_gib": 0.10}
PLAN_TERM = {
    "weights_gib": "weights_bytes",
    "peak_activation_gib": "activation_peak_bytes",
    "non_torch_gib": "non_torch_bytes",
    "available_kv_cache_gib": "available_kv_cache_bytes",
}


@cache
def _doc() -> dict[str, Any]:
    return json.loads((ROOT / LOGS_FILE).read_text())


@cache
def _versions_json() -> dict[str, Any]:
    return json.loads((ROOT / "csrc" / "core" / "plan" / "vllm_versions.json").read_text())


def _logs() -> list[dict[str, Any]]:
    return _doc()["logs"]


def _config(log: dict[str, Any]) -> Any:
    src = log["config_source"]
    if src == "bundled":
        return log["model"]
    if src == "configs":
        return _doc()["configs"][log["model"]]["config"]
    assert src == "multimodal_configs", src
    return json.loads((DATA / "multimodal_configs.json").read_text())[log["model"]]["config"]


def _plan(log: dict[str, Any], **overrides: Any) -> Any:
    """The start-up as the entry records it; settings it leaves unset (None) are the release's."""
    total = log["total_memory_gib"]
    kwargs: dict[str, Any] = dict(
        gpu=log["gpu_name"],
        gpu_memory_utilization=log["gpu_memory_utilization"],
        max_model_len=log["max_model_len"],
        tensor_parallel_size=log["tensor_parallel_size"],
        max_num_seqs=log["max_num_seqs"],
        max_num_batched_tokens=log["max_num_batched_tokens"],
        block_size=log["block_size"],
        vllm_version=log["release"],
        usage_context=log["usage_context"],
        # Settings the start-up printed beyond the common ones (kv_cache_dtype, prefix caching and
        # the Mamba cache mode vLLM picked for it).
        **log.get("plan_settings", {}),
        # The printed total (2 decimals) where the log gives one; else only the KV lines are
        # compared, from the printed available memory (kv_cache_memory_bytes), and any budget
        # above it will do.
        total_memory_bytes=round(total * GiB) if total else round(2 * log["observed"]["available_kv_cache_gib"] * GiB),
    )
    if log.get("plan_from_printed_pool"):
        # Neither the budget nor the graph settings are printed: the printed pool is the input
        # (vLLM's --kv-cache-memory path, which profiles nothing), so the weights and the KV
        # lines are what the entry checks.
        kwargs["kv_cache_memory_bytes"] = math.floor(log["observed"]["available_kv_cache_gib"] * GiB)
    kwargs.update(overrides)
    return vllm_mem.plan(_config(log), **kwargs)


def _profile_of(release: str) -> str:
    """The newest profile not newer than the release, as vllm_mem resolves it."""
    key = tuple(int(x) for x in release.split("."))
    return max(
        (p["version"] for p in vllm_mem.vllm_versions() if tuple(int(x) for x in p["version"].split(".")) <= key),
        key=lambda v: tuple(int(x) for x in v.split(".")),
    )


def _ids(logs: list[dict[str, Any]]) -> list[str]:
    return [log["id"] for log in logs]


def test_every_entry_names_its_source_release_and_printed_lines() -> None:
    seen = set()
    for log in _logs():
        assert log["id"] not in seen
        seen.add(log["id"])
        # A repository file pinned to a commit, an issue / pull request thread that quotes the log, or
        # a file of the search index whose repository the index does not name, by its code-index
        # file id (read_file id=N reopens it; python/vllm_mem/configs/SOURCES.md cites the same way).
        assert re.fullmatch(
            r"https://github\.com/[\w.-]+/[\w.-]+/(blob/[0-9a-f]{40}/\S+|(issues|pull)/\d+)|code-index id \d{6,}",
            log["url"],
        ), log["id"]
        assert log["release_evidence"] and log["printed_lines"] and log["gpu"] and log["model"], log["id"]
        assert log["checks"], log["id"]
        # Every observed figure appears in the printed lines as the source quotes it.
        text = " ".join(log["printed_lines"])
        for key, value in log["observed"].items():
            shown = [f"{value:,}", str(value)] if isinstance(value, int) else [f"{value:.2f}", str(value)]
            assert any(x in text for x in shown), (log["id"], key, shown)
        for term in list(log["not_compared"]) + list(log["known_disagreements"]):
            assert term in log["observed"] and (log["not_compared"].get(term) or log["known_disagreements"][term])
    lines = {".".join(log["release"].split(".")[:2]) for log in _logs()}
    assert {f"0.{n}" for n in (10, 11, 13, 14, 15, 16, 17, 18, 20, 23, 24, 25, 26, 27, 28, 29, 30, 31)} <= lines


@pytest.mark.parametrize("log", _logs(), ids=_ids(_logs()))
def test_each_printed_term_within_its_tolerance(log: dict[str, Any]) -> None:
    p = _plan(log)
    # A patch release plans with its line's profile (0.10.2 -> 0.10.0).
    assert p.vllm_version == _profile_of(log["release"]) and p.vllm_version_source == "asked"
    for term, tol in TOL_GIB.items():
        if term not in log["observed"] or term in log["not_compared"]:
            continue
        planned = getattr(p, PLAN_TERM[term]) / GiB
        err = planned - log["observed"][term]
        if term in log["known_disagreements"]:
            # Documented in the entry: still off, or the rule got fixed and the entry must move.
            assert abs(err) > tol, (log["id"], term, planned, "now agrees: move it to the checked terms")
        else:
            assert abs(err) <= tol, (log["id"], term, round(planned, 3), log["observed"][term])


def _plan_at_printed_available(log: dict[str, Any], delta_gib: float = 0.0) -> Any:
    """The plan with the KV pool the start-up printed (plus delta_gib)."""
    available = log["observed"]["available_kv_cache_gib"]
    stand_in = {}
    if not log["total_memory_gib"]:
        # No printed total: any budget that holds the plan's weights beside the printed pool will do
        # (the weights may be a quantized checkpoint's, planned at the bf16 shape of its config).
        stand_in["total_memory_bytes"] = 2 * (_plan(log).weights_bytes + round(available * GiB))
    return _plan(log, kv_cache_memory_bytes=math.floor((available + delta_gib) * GiB), **stand_in)


def _kv_from_printed_available(log: dict[str, Any]) -> tuple[tuple[int, int], tuple[float, float]]:
    """The plan's KV tokens and concurrency for the printed available memory, over its rounding
    interval (+-0.005 GiB)."""
    caps = [_plan_at_printed_available(log, d).kv_cache for d in (-0.005, 0.005)]
    return (caps[0].num_tokens, caps[1].num_tokens), (caps[0].max_concurrency, caps[1].max_concurrency)


_KV_LOGS = [g for g in _logs() if {"maximum_concurrency_x", "gpu_kv_cache_size_tokens"} & set(g["observed"])]


@pytest.mark.parametrize("log", _KV_LOGS, ids=_ids(_KV_LOGS))
def test_kv_tokens_and_concurrency_follow_the_releases_formula(log: dict[str, Any]) -> None:
    """From the printed available memory: 0.10-0.19 print blocks // groups x block size tokens and
    the concurrency of get_max_concurrency_for_kv_cache_config; 0.21+ print int(concurrency x
    max_model_len) tokens (kv_log_format; the v0.20.0 image still prints the grouped count),
    sliding-window needs uncapped."""
    (tok_lo, tok_hi), (conc_lo, conc_hi) = _kv_from_printed_available(log)
    obs = log["observed"]
    if "gpu_kv_cache_size_tokens" in obs:
        assert tok_lo <= obs["gpu_kv_cache_size_tokens"] <= tok_hi, (tok_lo, tok_hi)
    # Printed with 2 decimals (where the source quotes the line).
    if "maximum_concurrency_x" in obs:
        assert conc_lo - 0.005 <= obs["maximum_concurrency_x"] <= conc_hi + 0.005, (conc_lo, conc_hi)


def _heldout_sliding_window_rows() -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (DATA / "heldout_startups.jsonl").read_text().splitlines() if line]
    return [r for r in rows if any(k in r["model_config_ref"] for k in ("gemma", "gpt-oss"))]


@pytest.mark.parametrize("row", _heldout_sliding_window_rows(), ids=lambda r: r["case_id"][-36:])
def test_sliding_window_need_is_vllms_uncapped_formula_on_v0_19(row: dict[str, Any]) -> None:
    """The v0.19 held-out start-ups of sliding-window models (gpt-oss-20b TP 2, Gemma-2, Gemma-3)
    print the concurrency of SlidingWindowSpec.max_memory_usage_bytes as written (cdiv(...) + 1),
    not capped at a full layer's need: the rule sliding_window_capped_at_full is false there too."""
    configs = {k: v["config"] for k, v in json.loads((DATA / "heldout_model_configs.json").read_text()).items()}
    obs = row["observed"]
    found = []
    for delta in (-0.005, 0.005):
        p = vllm_mem.plan(
            configs[row["model_config_ref"]],
            gpu="H100-80GB",
            vllm_version=row["vllm_version"],
            max_model_len=row["max_model_len"],
            tensor_parallel_size=row["tensor_parallel_size"],
            max_num_seqs=row["max_num_seqs"],
            max_num_batched_tokens=row["max_num_batched_tokens"],
            gpu_memory_utilization=row["gpu_memory_utilization"],
            quantization=None,
            kv_cache_memory_bytes=math.floor((obs["available_kv_cache_memory_gib"] + delta) * GiB),
        )
        found.append(p.kv_cache.max_concurrency)
    assert found[0] - 0.005 <= obs["maximum_concurrency_x"] <= found[1] + 0.005, (found, obs["maximum_concurrency_x"])


def test_default_utilization_and_graph_budget_on_a_0_23_start_up() -> None:
    """The v0.23.0 MI300X start-up sets no --gpu-memory-utilization: its 162.84 GiB available is
    the 0.92 default less the CUDA-graph estimate (both PR #38284, from v0.20.0). Within 0.5 GiB (ROCm's
    profile peak, non-torch and graph terms are not calibrated), where 0.9 would be 3.8 GiB lower
    and leaving the graph estimate out 0.8 GiB higher; the server's 8,192 batched tokens too."""
    log = next(g for g in _logs() if g["id"] == "orbit-gemma-3-4b-mi300x-v0.23.0")
    printed = log["observed"]["available_kv_cache_gib"]
    p = _plan(log)
    assert p.settings["gpu_memory_utilization"] == 0.92 and p.settings["cudagraph_memory_in_budget"]
    assert abs(p.available_kv_cache_bytes / GiB - printed) <= 0.5
    assert abs(_plan(log, gpu_memory_utilization=0.9).available_kv_cache_bytes / GiB - printed) > 0.5
    assert abs(_plan(log, cudagraph_memory_in_budget=False).available_kv_cache_bytes / GiB - printed) > 0.5
    assert p.settings["max_num_batched_tokens"] == log["observed"]["max_num_batched_tokens"]


def _printed_wording(tokens: int, max_model_len: int, concurrency: float, block_tokens: int) -> str:
    """Which token wording printed figures show: int(concurrency x max_model_len) tokens
    (v1_concurrency_tokens) are that product, and off the block grid; block ids // groups x block
    size (v1_grouped_tokens) are on the grid, and far from it when there are several groups.
    'either' when both hold (one group: the two agree)."""
    from_concurrency = abs(tokens / max_model_len - concurrency) <= 0.005
    on_grid = tokens % block_tokens == 0
    if from_concurrency == on_grid:
        return "either"
    return "v1_concurrency_tokens" if from_concurrency else "v1_grouped_tokens"


def _printed_layout(printed_lines: list[str]) -> str | None:
    """'one' where the tokens and the concurrency share a line (v1_combined_line, from 0.28), 'two'
    where the tokens line ends at its count, None where the source does not quote the line."""
    if any("tokens, Maximum concurrency for" in line for line in printed_lines):
        return "one"
    if any(re.search(r"GPU KV cache size: [\d,]+ tokens$", line) for line in printed_lines):
        return "two"
    return None


def _rule_values(wording: str, layout: str | None) -> frozenset[str]:
    """The kv_log_format values a wording and a line layout allow: the concurrency count is printed
    on two lines (v1_concurrency_tokens) or one (v1_combined_line)."""
    if wording != "v1_concurrency_tokens":
        return frozenset({wording})
    by_layout = {"one": {"v1_combined_line"}, "two": {"v1_concurrency_tokens"}}
    return frozenset(by_layout.get(layout, {"v1_combined_line", "v1_concurrency_tokens"}))


def _wording_cases() -> list[tuple[str, str, frozenset[str]]]:
    """(id, release, the kv_log_format values the printed lines allow) for every start-up that tells
    the wordings apart: the planned entries (block size from the plan's KV groups) and the
    wording-only records (start-ups whose model or settings vllm_mem does not plan, block size as
    printed)."""
    cases = []
    for log in _KV_LOGS:
        obs = log["observed"]
        if {"gpu_kv_cache_size_tokens", "maximum_concurrency_x"} <= set(obs):
            block = min(g.block_size for g in _plan_at_printed_available(log).kv_cache.groups)
            wording = _printed_wording(
                obs["gpu_kv_cache_size_tokens"], log["max_model_len"], obs["maximum_concurrency_x"], block
            )
            if wording != "either":
                cases.append((log["id"], log["release"], _rule_values(wording, _printed_layout(log["printed_lines"]))))
    for rec in _doc()["wording_only"]:
        wording = _printed_wording(
            rec["tokens"], rec["max_model_len"], rec["maximum_concurrency_x"], rec["block_tokens"]
        )
        if wording != "either":
            cases.append((rec["id"], rec["release"], _rule_values(wording, _printed_layout(rec["printed_lines"]))))
    return cases


def test_the_token_wording_each_start_up_shows_is_its_releases_rule() -> None:
    """kv_log_format by release, from the printed lines alone: the v0.20.0 image still prints the
    grouped count (79,648 = 38 x 2,096 at 4.03x for 65,536), v0.22.0 and later int(concurrency x
    max_model_len) (3,131,683 at 15.66x for 200,000; 2,324,244 at 70.93x for 32,768), on two lines
    until 0.27 and on one from 0.28.0 (5,788,118 tokens at 22.08x for 262,144)."""
    cases = _wording_cases()
    releases = {".".join(r.split(".")[:2]) for _, r, _ in cases}
    assert {"0.20", "0.22", "0.24", "0.26", "0.28"} <= releases, releases
    for log_id, release, allowed in cases:
        assert _profile_rule(_profile_of(release), "kv_log_format")["value"] in allowed, (log_id, release, allowed)
    # The layout is read where the source quotes it: the 0.28.0 wheel's line, the 0.24.0 two lines.
    layouts = {log["id"]: _printed_layout(log["printed_lines"]) for log in _logs()}
    assert layouts["w1-qwen3.5-0.8b-a100-llm-v0.28.0"] == "one"
    assert layouts["club3090-qwen3.6-35b-a3b-nvfp4-rtx5090-v0.24.0"] == "two"


_BATCH_LOGS = [g for g in _logs() if "max_num_batched_tokens" in g["observed"]]


@pytest.mark.parametrize("log", _BATCH_LOGS, ids=_ids(_BATCH_LOGS))
def test_scheduler_defaults_are_the_ones_the_start_up_printed(log: dict[str, Any]) -> None:
    """Where the start-up left the batched tokens to vLLM and printed what it took ('Chunked prefill
    is enabled with max_num_batched_tokens=N'), the release's batch_defaults give N for that GPU
    and entry point: 8,192 on the v0.23.0 MI300X server, 8,192 for the LLM class and 2,048 for the
    server on a v0.28.0 A100 (the >= 70 GiB tier leaves the A100 out)."""
    assert log["max_num_batched_tokens"] is None, log["id"]
    assert _plan(log).settings["max_num_batched_tokens"] == log["observed"]["max_num_batched_tokens"]


def test_the_kv_lines_are_one_line_exactly_where_the_release_says() -> None:
    """v1_combined_line (from 0.29) prints tokens and concurrency on one line ('GPU KV cache size:
    651,504 tokens, Maximum concurrency for 4,096 tokens per request: 159.06x', v0.31.0); every
    older release seen prints them as two lines."""
    seen = set()
    for rec in _logs() + _doc()["wording_only"]:
        size_lines = [x for x in rec["printed_lines"] if "GPU KV cache size:" in x]
        if not size_lines:
            continue
        one_line = all("Maximum concurrency for" in x for x in size_lines)
        wording = _profile_rule(_profile_of(rec["release"]), "kv_log_format")["value"]
        assert one_line == (wording == "v1_combined_line"), (rec["id"], wording)
        seen.add(one_line)
    assert seen == {True, False}


def test_wording_only_records_quote_their_figures() -> None:
    for rec in _doc()["wording_only"]:
        assert re.fullmatch(r"code-index id \d{6,}|https://github\.com/\S+", rec["url"]) and rec["why_not_planned"]
        text = " ".join(rec["printed_lines"])
        assert (
            f"{rec['tokens']:,} tokens" in text
            and f"{rec['max_model_len']:,} tokens per request: {rec['maximum_concurrency_x']:.2f}x" in text
        )
        assert f"block size to {rec['block_tokens']} tokens" in text
        assert f"version {rec['release']}" in text or f"LLM engine (v{rec['release']})" in text


def test_the_graph_estimate_is_in_the_budget_wherever_the_log_says_so() -> None:
    """vLLM prints 'CUDA graph memory profiling is enabled (default since v0.21.0). The current
    --gpu-memory-utilization=U is equivalent to ... without' only when it subtracts the estimate
    (vllm/v1/worker/gpu_worker.py); the v0.20.0 image prints it too, so the rule starts at 0.20.0
    (the text's 'v0.21.0' notwithstanding), and 0.19 did not subtract it."""
    enabled = [g for g in _logs() if any("CUDA graph memory profiling is enabled" in x for x in g["printed_lines"])]
    assert {g["release"] for g in enabled} >= {"0.20.0", "0.26.0"}
    for log in enabled:
        assert _plan(log).settings["cudagraph_memory_in_budget"], log["id"]
    assert not vllm_mem.plan(LLAMA_8B, gpu="H100-80GB", max_model_len=8192, vllm_version="0.19.0").settings[
        "cudagraph_memory_in_budget"
    ]


def test_a_dense_model_on_0_27_keeps_no_graph_memory_in_the_budget() -> None:
    """The v0.27.1 Qwen2.5-0.5B start-up (a dense model: Model Runner V2) prints its budget as
    requested less consumed less peak, '0.0 GiB for CUDAGraph memory', and that is its printed
    available memory; the plan (model_runner 0.25.0, v2_runner_cudagraph_profiling 0.7.0) leaves
    graphs out too, while the same start-up planned on the V1 runner's 0.24 profile would not."""
    log = next(g for g in _logs() if g["id"] == "wsl-qwen2.5-0.5b-rtx4090-v0.27.1")
    budget = re.search(
        r"\(0\.92, ([\d.]+) GiB\)\. Actual usage is ([\d.]+) GiB for consumed memory \(weights \+ non-torch\), "
        r"([\d.]+) GiB for peak activation, and ([\d.]+) GiB for CUDAGraph memory",
        " ".join(log["printed_lines"]),
    )
    requested, consumed, peak, graphs = (float(x) for x in budget.groups())
    assert graphs == 0 and abs(requested - consumed - peak - log["observed"]["available_kv_cache_gib"]) <= 0.015
    p = _plan(log)
    assert p.cudagraph_bytes > 0  # the V1 runner's estimate exists, but is not in this budget
    assert p.available_kv_cache_bytes == (
        p.requested_bytes - p.weights_bytes - p.activation_peak_bytes - p.non_torch_bytes
    )
    v1 = _plan(log, vllm_version="0.24.0")
    # The V1 runner's budget also carries its own profile peak (the Triton sampler's 13 B/logit
    # where V2 keeps one float32 copy: v2_sampler_bytes_per_logit).
    assert v1.activation_peak_bytes > p.activation_peak_bytes
    assert v1.available_kv_cache_bytes == (
        p.available_kv_cache_bytes - v1.cudagraph_bytes - (v1.activation_peak_bytes - p.activation_peak_bytes)
    )


def test_the_0_24_start_ups_tell_the_two_token_wordings_apart() -> None:
    """The RTX 5090 Qwen3.6-35B-A3B start-ups of v0.24.0 print 567,978 and 569,878 tokens: the 0.20+
    wording int(concurrency x max_model_len) over 299 and 300 block ids; the 0.10-0.19 wording
    (block ids // groups x block size, 4 groups of 2,096-token blocks) would print 155,104 and 157,200."""
    for log in (g for g in _logs() if g["id"].startswith("club3090-qwen3.6-35b-a3b")):
        printed = log["observed"]["gpu_kv_cache_size_tokens"]
        (lo, hi), _ = _kv_from_printed_available(log)
        assert lo <= printed <= hi, (lo, hi)
        older = _kv_from_printed_available({**log, "release": "0.19.0"})[0]
        assert older[1] < printed / 3 and older[0] % 2096 == 0 and older[1] % 2096 == 0, older


def test_a_hybrid_targets_state_holds_the_speculated_tokens() -> None:
    """The v0.22.0 Qwen3.6-35B-A3B MTP start-up (K = 3, prefix caching) prints a 1,072-token block,
    'Add 3 padding layers' and 15.66x: every GDN layer keeps K more conv rows and K more state
    blocks (vllm/model_executor/layers/mamba/abstract.py get_kv_cache_spec, num_speculative_blocks =
    num_speculative_tokens; mamba_utils.py, conv_kernel - 1 + num_spec), whatever the drafter.
    Without them the plan had 1,056-token blocks and 16.38x. The DFlash record of the same
    checkpoint (K = 6) prints 1,104, the same rule's block: (3 + 6) x 8,192 x 2 B + 2,097,152 =
    2,244,608 bytes = 1,096 tokens of 2,048 B, rounded up to a multiple of 16 (its drafter's own
    layers are refused, not its block)."""
    log = next(g for g in _logs() if g["id"] == "prismaquant-qwen3.6-35b-a3b-mtp-v0.22.0")
    p = _plan_at_printed_available(log)
    assert p.kv_cache.groups[0].block_size == log_block(log) == 1072
    assert p.kv_cache.num_padding_layers == 3
    blocks_per_request = sum(g.blocks_per_request for g in p.kv_cache.groups)
    assert blocks_per_request == -(-200_000 // 1072) + 3 * (2 + 3)
    settings = {k: v for k, v in log["plan_settings"].items() if k != "speculative_config"}
    available = math.floor(log["observed"]["available_kv_cache_gib"] * GiB)
    no_states = vllm_mem.kv_cache_capacity(_config(log), available, 200_000, vllm_version="0.22.0", **settings)
    assert no_states.groups[0].block_size == 1056
    dflash = next(r for r in _doc()["wording_only"] if r["id"] == "prismaquant-qwen3.6-35b-a3b-dflash-v0.22.0")
    k6 = vllm_mem.kv_cache_capacity(
        _config(log), available, 200_000, num_speculative_tokens=6, vllm_version="0.22.0", **settings
    )
    assert k6.groups[0].block_size == dflash["block_tokens"] == 1104


def log_block(log: dict[str, Any]) -> int:
    """The attention block size the start-up printed ('Setting attention block size to N tokens')."""
    line = next(x for x in log["printed_lines"] if "Setting attention block size to" in x)
    return int(re.search(r"block size to (\d+) tokens", line).group(1))


def test_the_sampler_rule_change_at_0_17_matches_the_same_models_peaks() -> None:
    """One model, one GPU, one sweep: Qwen3-14B's peak fell by 3.41 GiB from v0.16 to v0.17,
    which the two sampler rules give over its 1,024 x 151,936 dummy logits."""
    by_rel = {g["release"]: g for g in _logs() if g["model"] == "Qwen/Qwen3-14B"}
    drop = (_plan(by_rel["0.16.0"]).activation_peak_bytes - _plan(by_rel["0.17.0"]).activation_peak_bytes) / GiB
    printed = by_rel["0.16.0"]["observed"]["peak_activation_gib"] - by_rel["0.17.0"]["observed"]["peak_activation_gib"]
    assert abs(drop - printed) <= 0.02, (drop, printed)


def test_the_0_11_0_start_up_rules_out_the_sort_sampler() -> None:
    """v0.11.0 took FlashInfer's top-k/top-p by default on CUDA (PR #26859 turned it off after
    0.11.0): the Mistral-Small-3.2-24B start-up printed 2.12 GiB over 1,024 x 131,072 dummy logits,
    where the PyTorch sort of 0.11.1-0.16 (36.4 B/logit) gives 4.88 GiB and FlashInfer's three
    float32 copies (12 B/logit, from the code) leave the sampler phase under the forward's 1.85 GiB,
    itself under the Pixtral encoder's dummy run (2.14 GiB)."""
    log = next(g for g in _logs() if g["id"] == "llmd-benchmark-mistral-small-3.2-24b-h100")
    printed = log["observed"]["peak_activation_gib"]
    flashinfer = _plan(log).activation_peak_bytes / GiB
    sort = _plan(log, vllm_version="0.11.1").activation_peak_bytes / GiB
    assert sort - printed > 2.5, sort
    # The multimodal profile run's encoder phase is this plan's peak (test_multimodal_profile.py),
    # within 0.05 GiB of the print.
    assert abs(printed - flashinfer) <= 0.05, flashinfer
    # The sort path's peak is its sampler phase; FlashInfer's is (36.4 - 12) B per logit less, under
    # the forward that the 0.11.0 plan's peak is.
    flashinfer_sampler_phase = sort - (36.4 - 12.0) * 1024 * 131072 / GiB
    assert flashinfer_sampler_phase < flashinfer, (flashinfer_sampler_phase, flashinfer)


@pytest.mark.parametrize("version", ["0.29", "0.29.0rc1", "0.30.2", "0.31.0", "0.32.0", "0.99"])
def test_from_0_29_only_what_model_runner_v2_leaves_unmeasured_is_planned(version: str) -> None:
    """From 0.29 Model Runner V2 serves every model and subtracts the memory it measures capturing
    every CUDA graph (PR #53306): no rule reproduces that measurement, so a start-up that captures
    graphs into the budget is refused by name, naming the settings that are planned; the same
    release with --enforce-eager (or NONE graphs, the estimate off, a given KV pool) is planned."""
    with pytest.raises(vllm_mem.NotModelledError, match=r"Model Runner V2 .* enforce_eager=True"):
        vllm_mem.plan(LLAMA_8B, gpu="H100-80GB", max_model_len=8192, vllm_version=version)
    moe = "Qwen/Qwen3-30B-A3B"  # V2 for every model: a MoE too
    with pytest.raises(vllm_mem.NotModelledError, match="enforce_eager"):
        vllm_mem.plan(moe, gpu="H100-80GB", max_model_len=8192, vllm_version=version)
    for model in (LLAMA_8B, moe):
        eager = vllm_mem.plan(model, gpu="H100-80GB", max_model_len=8192, vllm_version=version, enforce_eager=True)
        assert eager.to_dict()["vllm_version"]["model_runner"] == "v2" and eager.cudagraph_bytes == 0
        assert eager.vllm_version >= "0.29.0"
    for settings in ({"cudagraph_mode": "NONE"}, {"cudagraph_memory_in_budget": False},
                     {"kv_cache_memory_bytes": 40 << 30}):
        vllm_mem.plan(LLAMA_8B, gpu="H100-80GB", max_model_len=8192, vllm_version=version, **settings)
    # The V1 runner's estimate is modelled: a method V2 does not run falls back to it, and plans.
    ngram = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}
    p = vllm_mem.plan(LLAMA_8B, gpu="H100-80GB", max_model_len=8192, vllm_version=version, speculative_config=ngram)
    assert p.to_dict()["vllm_version"]["model_runner"] == "v1" and p.settings["cudagraph_memory_in_budget"]


def test_the_0_29_0_start_up_runs_model_runner_v2_on_a_hybrid_and_measures_its_graphs() -> None:
    """The v0.29.0 Qwen3.8-27B start-up (R9700, no speculation) prints 'Using V2 Model Runner' for a
    gated-DeltaNet hybrid and captures its graphs before sizing the pool ('CUDA graph memory
    profiling is enabled'): model_runner 0.29.0 gives every model V2 (0.28 kept hybrids on V1) and
    v2_runner_cudagraph_profiling 0.29.0 puts the measured graphs in the budget, which the plan of
    the same settings refuses by name unless the pool is given. Given the printed pool, the block is
    the printed 1,568 tokens (a 1-byte cache: 2-byte elements give 784)."""
    log = next(g for g in _logs() if g["id"] == "dp-craft-qwen3.8-27b-int4-r9700-v0.29.0")
    text = " ".join(log["printed_lines"])
    assert "Using V2 Model Runner" in text and "CUDA graph memory profiling is enabled" in text
    p = _plan_at_printed_available(log)
    assert p.to_dict()["vllm_version"]["model_runner"] == "v2"
    assert min(g.block_size for g in p.kv_cache.groups) == log_block(log) == 1568
    pool = {
        "kv_cache_memory_bytes": math.floor(log["observed"]["available_kv_cache_gib"] * GiB),
        "total_memory_bytes": 2 * (p.weights_bytes + p.available_kv_cache_bytes),
    }
    two_byte = _plan(log, kv_cache_dtype="auto", **pool)
    assert min(g.block_size for g in two_byte.kv_cache.groups) == 784
    assert two_byte.kv_cache.max_concurrency < 2.81 < log["observed"]["maximum_concurrency_x"]
    budget = {"kv_cache_memory_bytes": None, "total_memory_bytes": round(31.86 * GiB)}
    with pytest.raises(vllm_mem.NotModelledError, match="Model Runner V2 subtracts the memory it measures"):
        _plan(log, **budget)
    assert _plan(log, vllm_version="0.28.0", **budget).to_dict()["vllm_version"]["model_runner"] == "v1"


@pytest.mark.parametrize("model", [LLAMA_8B, "Qwen/Qwen3-30B-A3B"])
def test_a_0_29_sweep_marks_only_the_graph_rows_invalid(model: str) -> None:
    """A sweep over enforce_eager on 0.29: the rows that would put Model Runner V2's measured graph
    memory in the budget are invalid, the eager rows are the eager plans."""
    cols = vllm_mem.sweep(model, "H100-80GB", enforce_eager=[False, True], max_model_len=8192,
                          vllm_version="0.29", as_frame=False)
    assert [str(x) for x in cols["failure_phase"]][0] == "invalid"
    eager = vllm_mem.plan(model, "H100-80GB", enforce_eager=True, max_model_len=8192, vllm_version="0.29")
    assert int(cols["available_kv_cache_bytes"][1]) == eager.available_kv_cache_bytes


def test_the_default_release_is_the_newest_whose_graph_start_ups_are_planned() -> None:
    """Without a version asked or installed a plan takes 0.28.0, not 0.32.0: a default plan
    captures CUDA graphs, which from 0.29 only a measurement on the device sizes."""
    p = vllm_mem.plan(LLAMA_8B, gpu="H100-80GB", max_model_len=8192)
    assert (p.vllm_version, p.vllm_version_source) == ("0.28.0", "newest known")
    assert "newest release whose CUDA-graph start-ups vllm_mem plans" in p.vllm_version_note
    assert vllm_mem.vllm_versions()[-1]["version"] == "0.32.0"


def _profile_rule(release: str, rule: str) -> dict[str, Any]:
    prof = next(p for p in vllm_mem.vllm_versions() if p["version"] == release)
    return next(r for r in prof["rules"] if r["rule"] == rule)


def _checked_markers() -> dict[tuple[str, str], list[str]]:
    out = {}
    for name, rule in _versions_json()["rules"].items():
        for change in rule["changes"]:
            if "checked" in change:
                out[(name, change["since"])] = change["checked"]
    return out


def test_each_check_names_a_change_in_force_for_that_release() -> None:
    markers = _checked_markers()
    for log in _logs():
        profile_version = _profile_of(log["release"])
        for check in log["checks"]:
            rule, since = check.split("@")
            assert _profile_rule(profile_version, rule)["since"] == since, (log["id"], check)
            assert f"{LOGS_FILE}#{log['id']}" in markers[(rule, since)], (log["id"], check)


def test_every_checked_marker_names_an_existing_log_that_checks_it() -> None:
    logs = {g["id"]: g for g in _logs()}
    for (rule, since), refs in _checked_markers().items():
        assert refs, (rule, since)
        for ref in refs:
            path, _, log_id = ref.partition("#")
            assert (ROOT / path).is_file(), ref
            if log_id:
                assert path == LOGS_FILE and f"{rule}@{since}" in logs[log_id]["checks"], ref


def rule_table_rows() -> list[str]:
    """docs/vllm_versions.md's rule table, one row per change in vllm_versions.json's order: the
    value and source as compiled in (vllm_versions()), the checked markers from the JSON. The docs
    table is this function's output (python tests/python/test_release_logs.py prints it)."""
    compiled = {(r["rule"], r["since"]): r for prof in vllm_mem.vllm_versions() for r in prof["rules"]}
    rows = []
    for name, rule in _versions_json()["rules"].items():
        for change in rule["changes"]:
            r = compiled[(name, change["since"])]
            refs = change.get("checked", [])
            checked = ", ".join(ref.split("#")[1] if "#" in ref else Path(ref).name for ref in refs)
            rows.append(
                f"| `{name}` | `{r['value']}` | {r['since']} | {r['release']} | {checked or 'no log'} | {r['source']} |"
            )
    return rows


def test_the_docs_rule_table_is_the_generated_one() -> None:
    doc = (ROOT / "docs" / "vllm_versions.md").read_text()
    missing = [row for row in rule_table_rows() if row not in doc]
    assert not missing, "docs/vllm_versions.md rule table is stale; regenerate it:\n" + "\n".join(missing[:3])


def test_the_docs_list_the_rules_no_log_confirms() -> None:
    doc = (ROOT / "docs" / "vllm_versions.md").read_text()
    section = doc.split("## Rules no log confirms", 1)[1].split("\n## ", 1)[0]
    markers = _checked_markers()
    unconfirmed = {
        (name, change["since"])
        for name, rule in _versions_json()["rules"].items()
        for change in rule["changes"]
        if (name, change["since"]) not in markers
    }
    listed = set(re.findall(r"`(\w+)` (\d+\.\d+\.\d+)", section))
    assert listed == unconfirmed, (sorted(unconfirmed - listed), sorted(listed - unconfirmed))


def _profiles_a_marker_checks(refs: list[str]) -> set[str]:
    """The profiles whose own start-ups a change's checked markers name: a log of
    vllm_release_logs.json checks its release's profile, the calibration / held-out files 0.19.0's."""
    logs = {g["id"]: g for g in _logs()}
    return {_profile_of(logs[ref.split("#")[1]]["release"]) if "#" in ref else "0.19.0" for ref in refs}


def release_line_rows() -> list[str]:
    """docs/vllm_versions.md's table of what each profile's own start-ups confirm: the changes in
    force for the profile (vllm_versions()), split by where a start-up confirms them (here, only on
    other releases, nowhere). Printed by `python tests/python/test_release_logs.py lines`."""
    markers = _checked_markers()
    wording_only = _doc()["wording_only"]
    rows = []
    for prof in vllm_mem.vllm_versions():
        version = prof["version"]
        own = [g["id"] for g in _logs() if _profile_of(g["release"]) == version]
        own += [f"{r['id']} (wording only)" for r in wording_only if _profile_of(r["release"]) == version]
        if version == "0.19.0":
            own.append("the calibration set and the held-out rows")
        here, elsewhere, nowhere = [], [], []
        for r in prof["rules"]:
            profiles = _profiles_a_marker_checks(markers.get((r["rule"], r["since"]), []))
            target = here if version in profiles else elsewhere if profiles else nowhere
            target.append(f"`{r['rule']}` {r['since']}")
        cells = [", ".join(x) or "none" for x in (own, here, elsewhere, nowhere)]
        rows.append(f"| {version} | " + " | ".join(cells) + " |")
    return rows


def test_the_docs_say_what_each_releases_own_start_ups_confirm() -> None:
    """Every release a profile starts gets a row naming its own start-ups and, of the changes in
    force for it, the ones they confirm, the ones only other releases' start-ups confirm, and the
    ones none does; the rows are release_line_rows()'s."""
    doc = (ROOT / "docs" / "vllm_versions.md").read_text()
    section = doc.split("## What each release's own start-ups confirm", 1)[1].split("\n## ", 1)[0]
    missing = [row for row in release_line_rows() if row not in section]
    assert not missing, "regenerate with `python tests/python/test_release_logs.py lines`:\n" + "\n".join(missing[:2])
    listed = re.findall(r"^\| (\d+\.\d+\.\d+) \|", section, re.M)
    assert listed == [p["version"] for p in vllm_mem.vllm_versions()]


def test_the_docs_tables_hold_what_they_say() -> None:
    """The release table lists each profile once and nothing else; the log table has a row for the
    release of every start-up recorded in vllm_release_logs.json (a merge once left log rows inside
    the release table and dropped the 0.24.0 row)."""
    doc = (ROOT / "docs" / "vllm_versions.md").read_text()
    releases = doc.split("## The releases", 1)[1].split("\n## ", 1)[0]
    profile_rows = re.findall(r"^\| (\d+\.\d+\.\d+) \| ([^|]*?) \|", releases, re.M)
    assert [v for v, _ in profile_rows] == [p["version"] for p in vllm_mem.vllm_versions()]
    assert {engine for _, engine in profile_rows} <= {"v0", "v1"}
    checked = doc.split("## Checked against start-up logs of other releases", 1)[1].split("\n## ", 1)[0]
    first_cells = re.findall(r"^\| ([^|]+?) \|", checked, re.M)
    for log in json.loads((ROOT / LOGS_FILE).read_text())["logs"]:
        major_minor = ".".join(log["release"].split(".")[:2])
        assert any(cell.startswith(major_minor) or f" {major_minor}" in cell for cell in first_cells), log["id"]


if __name__ == "__main__":  # regenerate the docs tables: python tests/python/test_release_logs.py [lines]
    import sys

    if sys.argv[1:] == ["lines"]:
        print(
            "| profile | its own start-ups | confirmed by them | in force, confirmed only on other releases"
            " | in force, confirmed by no start-up |\n|---|---|---|---|---|"
        )
        print("\n".join(release_line_rows()))
    else:
        print("| rule | value | from | first release | checked by | source |\n|---|---|---|---|---|---|")
        print("\n".join(rule_table_rows()))
