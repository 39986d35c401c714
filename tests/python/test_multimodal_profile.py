"""vLLM's multimodal profile run (csrc/core/plan/mm_profile_estimate.cc) against the printed
"torch peak memory increase" of the vision-language start-ups in tests/data.

vLLM's GPUModelRunner.profile_run encodes max_items_per_batch dummy images of the largest size,
keeps their embeddings in the encoder cache (and the dummy pixels, a local of profile_run) through
the text forward and the dummy sampler, then clears the cache. The plan's peak is the larger of
the encoder phase and the text phases with those tensors beside them.

Rows: the v0.19.0 held-out start-ups of Gemma-3 4B / 12B / 27B and Mistral-Small-3.1-24B at TP 1
and TP 2 (tests/data/heldout_startups.jsonl, each with its printed lines and URL), planned with the
checkpoints' whole config (tests/data/multimodal_configs.json: the held-out file keeps only the
language model's), and the v0.11.0 Mistral-Small-3.2-24B start-up (tests/data/vllm_release_logs.json).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from startup_rows import startup_plan_inputs
from vllm_mem import _C

GiB = float(1 << 30)
DATA = Path(__file__).resolve().parents[1] / "data"
MM_CONFIGS = {k: v["config"] for k, v in json.loads((DATA / "multimodal_configs.json").read_text()).items()}
HELDOUT = {k: v["config"] for k, v in json.loads((DATA / "heldout_model_configs.json").read_text()).items()}
VL_ROWS = [
    r
    for r in (json.loads(line) for line in (DATA / "heldout_startups.jsonl").read_text().splitlines() if line)
    if r["model_config_ref"] in MM_CONFIGS
]
GEMMA2_ROW = next(
    json.loads(line)
    for line in (DATA / "heldout_startups.jsonl").read_text().splitlines()
    if line and "gemma-2-9b" in line
)

# Before commit 6fa29e4 the plan had no multimodal term: its peaks were the text phases alone.
# Measured on the commit before it (plan - printed, negative when the plan is low):
BEFORE_GIB = {
    "llmdplanner-v0190-google-gemma-3-27b-it-h100-tp1": -0.157,
    "llmdplanner-v0190-google-gemma-3-12b-it-h100-tp1": -0.130,
    "llmdplanner-v0190-google-gemma-3-4b-it-h100-tp1": -0.100,
    "llmdplanner-v0190-redhatai-mistral-small-24b-w8a8-h100-tp2": -0.077,
    "llmdplanner-v0190-redhatai-mistral-small-24b-w8a8-h100-tp1": -0.227,
}
# After 6fa29e4 (the multimodal run, with the fitted 13 B/logit sampler and Pixtral's layer at 5 h + 4 I),
# before the sampler's terms came from vLLM's code and Pixtral's layer counted the transformer's input:
MM_RUN_GIB = {
    "llmdplanner-v0190-google-gemma-3-27b-it-h100-tp1": +0.069,
    "llmdplanner-v0190-google-gemma-3-12b-it-h100-tp1": +0.072,
    "llmdplanner-v0190-google-gemma-3-4b-it-h100-tp1": +0.083,
    "llmdplanner-v0190-redhatai-mistral-small-24b-w8a8-h100-tp2": +0.007,
    "llmdplanner-v0190-redhatai-mistral-small-24b-w8a8-h100-tp1": -0.093,
}


def _plan(row: dict[str, Any], config: dict[str, Any], **settings: Any) -> Any:
    spec = vllm_mem.ModelSpec.from_hf_config(config)
    i = startup_plan_inputs(row, with_quantization=False)
    for key, value in settings.items():
        setattr(i, key, value)
    return _C.evaluate_plan(spec._spec, i)


def _peak_error(row: dict[str, Any], config: dict[str, Any], **settings: Any) -> float:
    plan = _plan(row, config, **settings)
    return plan.ranks[0].activation_peak_bytes / GiB - row["observed"]["torch_peak_memory_increase_gib"]


def _text_phases_error(row: dict[str, Any]) -> float:
    """The full plan's text phases (forward, sampler) alone, less the printed peak."""
    a = _plan(row, MM_CONFIGS[row["model_config_ref"]]).ranks[0].activation
    return max(a.forward_bytes, a.sampler_phase_bytes) / GiB - row["observed"]["torch_peak_memory_increase_gib"]


def _row(part: str) -> dict[str, Any]:
    (row,) = [r for r in VL_ROWS if part in r["case_id"]]
    return row


def test_the_rows_are_the_vision_language_start_ups() -> None:
    assert sorted(BEFORE_GIB) == sorted(r["case_id"] for r in VL_ROWS)
    # The TP 1 Mistral log prints the profile run's own line; its figures are what the budget gives.
    line = _row("mistral-small-24b-w8a8-h100-tp1")["raw_lines"]["encoder_cache"]
    assert "budget of 8192 tokens, and profiled with 2 image items" in line


def test_the_budget_vllm_printed() -> None:
    """The item counts vLLM printed: 2 Mistral-Small images (v0.19.0 held-out log) and 32 Gemma-3
    images (v0.23.0 Gemma-3-4B log in vllm_release_logs.json), from the configs' item sizes."""
    mistral = _plan(
        _row("mistral-small-24b-w8a8-h100-tp1"), MM_CONFIGS["mistralai/Mistral-Small-3.1-24B-Instruct-2503"]
    )
    m = mistral.ranks[0].activation.multimodal
    assert m.runs and m.items == 2 and m.budget.encoder_budget_tokens == 8192
    gemma = _plan(_row("gemma-3-4b"), MM_CONFIGS["google/gemma-3-4b-it"])
    g = gemma.ranks[0].activation.multimodal
    assert g.runs and g.items == 32 and g.budget.encoder_budget_tokens == 8192
    release = json.loads((DATA / "vllm_release_logs.json").read_text())["logs"]
    orbit = next(x for x in release if x["id"] == "orbit-gemma-3-4b-mi300x-v0.23.0")
    assert any("budget of 8192 tokens, and profiled with 32 image items" in s for s in orbit["printed_lines"])
    b = _C.compute_mm_encoder_budget(
        max_tokens_per_item=256, max_num_batched_tokens=8192, max_num_seqs=1024, max_model_len=8192
    )
    assert (b.encoder_budget_tokens, b.max_items_per_batch) == (8192, 32)


def test_terms_from_the_item_sizes() -> None:
    """Gemma-3: 32 images of 3 x 896 x 896 bf16 pixels and 32 x 256 embeddings of the text width;
    Mistral-3: 2 images of 3 x 1540 x 1540 pixels, 55 x 55 embeddings each, and the dense block
    mask over 2 x 110 x 110 patches."""
    g = _plan(_row("gemma-3-27b"), MM_CONFIGS["google/gemma-3-27b-it"]).ranks[0].activation.multimodal
    assert g.pixel_bytes == 32 * 3 * 896 * 896 * 2
    assert g.encoder_output_bytes == 32 * 256 * 5376 * 2
    assert g.attention_mask_bytes == 0
    m = (
        _plan(_row("mistral-small-24b-w8a8-h100-tp1"), MM_CONFIGS["mistralai/Mistral-Small-3.1-24B-Instruct-2503"])
        .ranks[0]
        .activation.multimodal
    )
    assert m.pixel_bytes == 2 * 3 * 1540 * 1540 * 2
    assert m.encoder_output_bytes == 2 * 55 * 55 * 5120 * 2
    assert m.attention_mask_bytes == (2 * 110 * 110) ** 2 * 2


def test_peaks_before_and_after() -> None:
    """Every vision-language row's peak within 0.05 GiB of the printed one (issue 20, item 8)."""
    gemma2_text_error = _peak_error(GEMMA2_ROW, HELDOUT["google/gemma-2-9b-it"])
    print(f"\nGemma-2-9B (text only, same sweep): plan - printed = {gemma2_text_error:+.3f} GiB")
    print("row | printed | no multimodal run -> multimodal run (fitted sampler) -> now (GiB, plan - printed)")
    after = {}
    for row in VL_ROWS:
        case = row["case_id"]
        after[case] = _peak_error(row, MM_CONFIGS[row["model_config_ref"]])
        # With the encoder run turned off the peak is the text phases' alone.
        no_images = _peak_error(row, MM_CONFIGS[row["model_config_ref"]], limit_mm_per_prompt=0)
        assert no_images == pytest.approx(_text_phases_error(row), abs=0.001)
        assert no_images < after[case]
        print(
            f"{case[-44:]:44s} {row['observed']['torch_peak_memory_increase_gib']:.2f} "
            f"{BEFORE_GIB[case]:+.3f} -> {MM_RUN_GIB[case]:+.3f} -> {after[case]:+.3f}"
        )
        assert abs(after[case]) <= 0.05, case
    # Mistral-Small at TP 1: the encoder phase (dense 1.09 GiB mask + the tower's layer) is the peak.
    mistral = _plan(
        _row("mistral-small-24b-w8a8-h100-tp1"), MM_CONFIGS["mistralai/Mistral-Small-3.1-24B-Instruct-2503"]
    )
    a = mistral.ranks[0].activation
    assert a.multimodal.encoder_phase_bytes > max(a.forward_bytes, a.sampler_phase_bytes) + a.multimodal.resident_bytes
    # Gemma-3: pixels + embeddings over the text phases; the text-only Gemma-2-9B row of the same sweep
    # (262k and 256k vocabularies) is within the same bar now that the sampler's terms are vLLM's.
    assert abs(gemma2_text_error) <= 0.05
    for case in (c for c in after if "gemma-3" in c):
        assert abs(after[case] - gemma2_text_error) <= 0.02, (case, after[case])


def test_release_0_11_mistral_small_peak() -> None:
    """v0.11.0, Mistral-Small-3.2-24B, TP 1 (vllm_release_logs.json): printed 2.12 GiB; the text
    phases alone planned 1.85 GiB (forward). The encoder phase with the dense mask is the peak."""
    log = next(
        x
        for x in json.loads((DATA / "vllm_release_logs.json").read_text())["logs"]
        if x["id"] == "llmd-benchmark-mistral-small-3.2-24b-h100"
    )
    plan = vllm_mem.plan(
        MM_CONFIGS[log["model"]],
        gpu="H100-80GB",
        gpu_memory_utilization=0.95,
        max_model_len=16000,
        block_size=128,
        vllm_version="0.11.0",
    )
    a = plan._p.ranks[0].activation
    assert a.multimodal.encoder_phase_bytes > max(a.forward_bytes, a.sampler_phase_bytes) + a.multimodal.resident_bytes
    assert abs(plan.activation_peak_bytes / GiB - log["observed"]["peak_activation_gib"]) <= 0.05


@pytest.mark.parametrize(
    "setting", [{"limit_mm_per_prompt": 0}, {"skip_mm_profiling": True}, {"language_model_only": True}]
)
def test_settings_that_turn_the_encoder_run_off(setting: dict[str, Any]) -> None:
    row = _row("gemma-3-12b")
    text_only = _text_phases_error(row)  # the plan without its multimodal terms
    assert _peak_error(row, MM_CONFIGS[row["model_config_ref"]], **setting) == pytest.approx(text_only, abs=0.001)
    plan = vllm_mem.plan(MM_CONFIGS["google/gemma-3-12b-it"], gpu="H100-80GB", max_model_len=8192, **setting)
    assert plan.multimodal_profile is not None and plan.multimodal_profile["runs"] == 0


def test_image_limit_bounds_the_batch() -> None:
    """--limit-mm-per-prompt '{"image": 1}' with 4 sequences: 4 x 1 images, not 32."""
    plan = vllm_mem.plan(
        MM_CONFIGS["google/gemma-3-4b-it"], gpu="H100-80GB", max_model_len=8192, max_num_seqs=4, limit_mm_per_prompt=1
    )
    assert plan.multimodal_profile["items"] == 4


def test_processor_cache_is_host_memory() -> None:
    """--mm-processor-cache-gb sizes a cache of processed inputs in the API server's / engine's host
    memory (vllm/config/multimodal.py mm_processor_cache_gb): no GPU term changes."""
    base = vllm_mem.plan(MM_CONFIGS["google/gemma-3-4b-it"], gpu="H100-80GB", max_model_len=8192)
    big = vllm_mem.plan(
        MM_CONFIGS["google/gemma-3-4b-it"], gpu="H100-80GB", max_model_len=8192, mm_processor_cache_gb=64.0
    )
    assert big.activation_peak_bytes == base.activation_peak_bytes
    assert big.available_kv_cache_bytes == base.available_kv_cache_bytes
    with pytest.raises(vllm_mem.InvalidArgumentError) as bad:
        vllm_mem.plan(MM_CONFIGS["google/gemma-3-4b-it"], gpu="H100-80GB", mm_processor_cache_gb=-1.0)
    assert bad.value.field == "mm_processor_cache_gb"
    with pytest.raises(vllm_mem.InvalidArgumentError) as bad_limit:
        vllm_mem.plan(MM_CONFIGS["google/gemma-3-4b-it"], gpu="H100-80GB", limit_mm_per_prompt=-5)
    assert bad_limit.value.field == "limit_mm_per_prompt"


def test_caveat_only_where_the_item_has_no_rule() -> None:
    for name in ("google/gemma-3-27b-it", "mistralai/Mistral-Small-3.1-24B-Instruct-2503"):
        assert vllm_mem.ModelSpec.from_hf_config(MM_CONFIGS[name]).caveats == [], name
    # A Pixtral tower under the LLaVA wrapper (Pixtral-12B's Hugging Face layout, LlavaForConditionalGeneration
    # over a pixtral vision_config; here Mistral-Small-3.1's tower) is counted, its processor has no rule yet.
    # (Qwen2.5-VL, then Kimi-VL, were this example until their processors got one:
    # tests/python/test_multimodal_profile_processors.py.)
    pixtral_llava = {
        **MM_CONFIGS["mistralai/Mistral-Small-3.1-24B-Instruct-2503"],
        "architectures": ["LlavaForConditionalGeneration"],
        "model_type": "llava",
    }
    spec = vllm_mem.ModelSpec.from_hf_config(pixtral_llava)
    assert len(spec.caveats) == 1 and "profiling" in spec.caveats[0]
    plan = vllm_mem.plan(pixtral_llava, gpu="H100-80GB", max_model_len=8192)
    assert plan.multimodal_profile is None
    for name in ("Qwen/Qwen2.5-VL-7B-Instruct", "moonshotai/Kimi-VL-A3B-Instruct"):
        assert vllm_mem.ModelSpec.from_hf_config(MM_CONFIGS[name]).caveats == [], name


def test_release_rule_for_the_pixtral_mask() -> None:
    """PR #52185 replaced the dense mask with per-image sequence lengths: in v0.29.0's wheel, not
    v0.28.0's (0.29 plans a dense model's start-up only eager: its V2 runner measures the graphs)."""
    cfg = MM_CONFIGS["mistralai/Mistral-Small-3.1-24B-Instruct-2503"]
    dense = vllm_mem.plan(cfg, gpu="H100-80GB", max_model_len=8192, vllm_version="0.28.0")
    packed = vllm_mem.plan(cfg, gpu="H100-80GB", max_model_len=8192, vllm_version="0.29.0", enforce_eager=True)
    assert dense.multimodal_profile["attention_mask_bytes"] == (2 * 12100) ** 2 * 2
    assert packed.multimodal_profile["attention_mask_bytes"] == 0


def test_text_only_leaves_the_tower_out_from_0_15() -> None:
    """From PR #32605 (0.15.0's wheel: _mark_tower_model) a model whose every modality is limited to 0
    builds no tower, so "Model loading took" drops it, as --language-model-only (PR #34120, 0.17.0)
    does; 0.14.0 built Gemma-3's tower whatever the limit (vllm_versions.json text_only_skips_vision_tower)."""
    cfg = MM_CONFIGS["google/gemma-3-27b-it"]
    full = vllm_mem.plan(cfg, gpu="H100-80GB", max_model_len=8192, vllm_version="0.19.0")
    text = vllm_mem.plan(cfg, gpu="H100-80GB", max_model_len=8192, vllm_version="0.19.0", language_model_only=True)
    assert full.vision_encoder_bytes > 0 and text.vision_encoder_bytes == 0
    assert full.weights_bytes - text.weights_bytes == full.vision_encoder_bytes
    older = vllm_mem.plan(cfg, gpu="H100-80GB", max_model_len=8192, vllm_version="0.14.0", limit_mm_per_prompt=0)
    assert older.vision_encoder_bytes == full.vision_encoder_bytes
    first = vllm_mem.plan(cfg, gpu="H100-80GB", max_model_len=8192, vllm_version="0.15.0", limit_mm_per_prompt=0)
    assert first.vision_encoder_bytes == 0


def test_language_model_only_is_refused_before_its_flag() -> None:
    """--language-model-only arrived in 0.17.0 (PR #34120; no wheel from 0.7.0 to 0.16.0 defines it,
    vllm_versions.json language_model_only_flag): an older release's parser refuses it, and so does the
    plan, naming the field and the way a text-only start-up was asked for then."""
    cfg = MM_CONFIGS["google/gemma-3-27b-it"]
    with pytest.raises(vllm_mem.InvalidArgumentError, match="unrecognized arguments: --language-model-only") as info:
        vllm_mem.plan(cfg, gpu="H100-80GB", max_model_len=8192, vllm_version="0.16.0", language_model_only=True)
    assert info.value.field == "language_model_only"
    assert "accepted from vLLM 0.17.0" in str(info.value) and "limit_mm_per_prompt" in str(info.value)
    assert vllm_mem.plan(cfg, gpu="H100-80GB", max_model_len=8192, vllm_version="0.17.0",
                         language_model_only=True).vision_encoder_bytes == 0
    # Unset, or False, is no flag at all: every release takes it.
    assert vllm_mem.plan(cfg, gpu="H100-80GB", max_model_len=8192, vllm_version="0.16.0",
                         language_model_only=False).vision_encoder_bytes > 0
