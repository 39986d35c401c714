"""Multimodal checkpoints: every vision-language config of tests/data/multimodal_configs.json reads
(transformers' class defaults filled in), the vision tower and projector are counted, the published
parameter counts are reproduced, and the plan shows the vision encoder's share of the weights.

tests/data/multimodal_configs.json is a copy of the team's collected configs (sources per entry,
``confirmed`` saying whether the whole published file was seen; tests/data/README.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import vllm_mem
from vllm_mem import ModelSpec

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
BF16_BYTES = 2


def _entries() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = json.loads((DATA_DIR / "multimodal_configs.json").read_text())
    return data


ENTRIES = _entries()
#: Llama-3.2-Vision (mllama): vLLM dropped every encoder-decoder model but Whisper in v0.11.
REFUSED = {"meta-llama/Llama-3.2-11B-Vision-Instruct"}


def _spec(name: str) -> ModelSpec:
    return ModelSpec.from_hf_config(ENTRIES[name]["config"])


#: Checkpoint parameter counts as published (safetensors metadata of the Hub repo), each with
#: where it was read. Every tensor counted: the language model, the vision tower, the projector.
PUBLISHED_PARAMETERS = {
    # huggingface.co/google/gemma-3-27b-it safetensors metadata (tests/data/README.md).
    "google/gemma-3-27b-it": 27_432_406_640,
    # huggingface.co/moonshotai/Kimi-VL-A3B-Instruct safetensors metadata (tests/data/README.md).
    "moonshotai/Kimi-VL-A3B-Instruct": 16_407_656_048,
    # huggingface.co/api/models/Qwen/Qwen2.5-VL-7B-Instruct at revision
    # cc594898137f460bfe9f0759e9844b3ce807cfb5: five safetensors shards, 8,292,166,656 BF16
    # parameters (quoted in a public repo, code-index file id 68353147964); the same figure is the
    # model index's total_size 16,584,333,312 bytes / 2 (code-index ids 55292638637, 61946890706)
    # and what transformers 4.57.1 counts after loading it (id 66490360962).
    "Qwen/Qwen2.5-VL-7B-Instruct": 8_292_166_656,
    # "4,300,079,472 parameters (safetensors metadata)" in model-card mirrors of
    # google/gemma-3-4b-it (code-index file ids 65969618575, 65759699780).
    "google/gemma-3-4b-it": 4_300_079_472,
    # mistralai/Mistral-Small-3.1-24B-Instruct-2503 at revision
    # 68faf511d618ef198fef186659617cfd2eb8e33a: 24,011,361,280 (code-index file id 62082989347).
    "mistralai/Mistral-Small-3.1-24B-Instruct-2503": 24_011_361_280,
    # meta-llama/Llama-4-Scout-17B-16E-Instruct: safetensors.parameters.BF16 = 108,641,793,536
    # (Hub metadata as recorded in code-index file id 68803403365; also ids 70957423560, 57625508376).
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": 108_641_793_536,
}

#: The vision tower + projector alone, as published.
PUBLISHED_VISION_PARAMETERS = {
    # sum(p.numel() for p in model.visual.parameters()) printed by a fine-tuning script for
    # Qwen2.5-VL-7B-Instruct (code-index file id 49095663873): 676,550,144 of 8,292,166,656.
    "Qwen/Qwen2.5-VL-7B-Instruct": 676_550_144,
    # Llama-4-Scout: checkpoint 108,641,793,536 minus the text backbone 107,769,861,120 = 871,932,416
    # for the vision encoder and projector (code-index file ids 56747956596, 71333187518).
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": 871_932_416,
}


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_every_collected_config_reads_or_is_refused_with_vllms_reason(name: str) -> None:
    config = ENTRIES[name]["config"]
    if name in REFUSED:
        with pytest.raises(NotImplementedError) as refused:
            ModelSpec.from_hf_config(config)
        # vLLM's reason: PR #24907 removed the encoder-decoder models (mllama among them) in v0.11.
        assert "mllama" in str(refused.value) and "24907" in str(refused.value)
        return
    spec = ModelSpec.from_hf_config(config)
    assert spec.has_exact_rules, name
    assert spec.vision is not None, name  # every collected tower has rules
    # so the multimodal caveat no longer applies, and every collected tower's processor has a largest-item
    # rule, so the encoder's profiling run is modelled (Gemma-3, Mistral-3: test_multimodal_profile.py;
    # Qwen-VL, LLaVA-NeXT, Llama-4, Kimi-VL: test_multimodal_profile_processors.py): no caveat. A tower
    # without one keeps the profiling caveat (test_first_hour.py).
    assert spec.caveats == [], name
    assert 0 < spec.vision_encoder_parameters < spec.num_parameters()
    breakdown = spec.weight_breakdown()
    assert breakdown["vision_encoder_parameters"] == spec.vision_encoder_parameters
    rank = breakdown["per_pp_rank"][0]
    assert 0 < rank["vision_encoder_bytes"] < rank["total_bytes"]


@pytest.mark.parametrize("name", sorted(PUBLISHED_PARAMETERS))
def test_published_parameter_counts(name: str) -> None:
    assert _spec(name).num_parameters() == PUBLISHED_PARAMETERS[name]


@pytest.mark.parametrize("name", sorted(PUBLISHED_VISION_PARAMETERS))
def test_published_vision_parameter_counts(name: str) -> None:
    spec = _spec(name)
    assert spec.vision_encoder_parameters == PUBLISHED_VISION_PARAMETERS[name]
    assert spec.weight_breakdown()["vision_encoder_parameters"] == PUBLISHED_VISION_PARAMETERS[name]


def test_the_vision_tower_is_counted_in_the_weights_at_one_gpu() -> None:
    # Gemma-3-27B: SigLIP 416,866,032 + projector 6,194,304 (csrc/core/model/vision_weights.cc,
    # tests/cpp/model/test_vision_weights.cc), every tensor in bf16 on one GPU.
    spec = _spec("google/gemma-3-27b-it")
    assert spec.vision is not None and spec.vision.encoder == "siglip"
    assert spec.vision.num_layers == 27 and spec.vision.hidden_size == 1152
    assert spec.vision_encoder_parameters == 416_866_032 + 6_194_304
    rank = spec.weight_breakdown()["per_pp_rank"][0]
    assert rank["vision_encoder_bytes"] == (416_866_032 + 6_194_304) * BF16_BYTES
    parts = ("embedding_bytes", "lm_head_bytes", "attention_bytes", "mlp_bytes", "norm_bytes",
             "quantization_overhead_bytes", "buffer_bytes", "vision_encoder_bytes")
    assert sum(rank[p] for p in parts) == rank["total_bytes"] == spec.weight_bytes()


def test_text_models_have_no_vision_share() -> None:
    spec = ModelSpec.from_hf_config("meta-llama/Llama-3.1-8B-Instruct")
    assert spec.vision is None and spec.vision_encoder_parameters == 0
    breakdown = spec.weight_breakdown()
    assert breakdown["vision_encoder_parameters"] == 0
    assert breakdown["per_pp_rank"][0]["vision_encoder_bytes"] == 0
    plan = vllm_mem.plan(spec, gpu="H100-80GB", max_model_len=8192)
    assert plan.vision_encoder_bytes == 0 and "vision encoder" not in str(plan)


def test_config_defaults_fill_gemma3s_text_config() -> None:
    # The published gemma-3-4b-it text_config has no vocab_size, heads or head_dim: transformers'
    # Gemma3TextConfig defaults apply (vocab 262208, 8 heads, 4 KV heads, head_dim 256).
    text = ENTRIES["google/gemma-3-4b-it"]["config"]["text_config"]
    assert not {"vocab_size", "num_attention_heads", "num_key_value_heads", "head_dim"} & set(text)
    spec = _spec("google/gemma-3-4b-it")
    assert (spec.vocab_size, spec.num_attention_heads, spec.num_kv_heads, spec.head_dim) == (262208, 8, 4, 256)
    assert ModelSpec.from_hf_config("google/gemma-3-4b-it").vocab_size == 262208  # the bundled file too


def test_tensor_parallel_splits_the_tower_as_vllm_does() -> None:
    # Qwen2.5-VL-7B at TP2: the Conv3d patch embedding (3 x 2 x 14 x 14 x 1280 = 1,505,280), both
    # RMSNorms of each of the 32 blocks (32 x 2 x 1280 = 81,920), the row-parallel biases
    # (32 x (1280 + 1280) = 81,920, the merger's 3,584) and the merger's ln_q (1,280) stay whole on
    # every rank; every column/row-parallel weight halves.
    spec = _spec("Qwen/Qwen2.5-VL-7B-Instruct")
    total = PUBLISHED_VISION_PARAMETERS["Qwen/Qwen2.5-VL-7B-Instruct"]
    replicated = 1_505_280 + 81_920 + 81_920 + 3_584 + 1_280
    tp1 = spec.weight_breakdown()["per_pp_rank"][0]["vision_encoder_bytes"]
    tp2 = spec.weight_breakdown(tensor_parallel_size=2)["per_pp_rank"][0]["vision_encoder_bytes"]
    assert tp1 == total * BF16_BYTES
    assert tp2 == (replicated + (total - replicated) // 2) * BF16_BYTES


def test_every_pipeline_rank_holds_the_tower() -> None:
    spec = _spec("google/gemma-3-27b-it")
    ranks = spec.weight_breakdown(pipeline_parallel_size=2)["per_pp_rank"]
    one_gpu = spec.weight_breakdown()["per_pp_rank"][0]["vision_encoder_bytes"]
    assert [r["vision_encoder_bytes"] for r in ranks] == [one_gpu, one_gpu]


def test_plan_report_html_and_dict_show_the_vision_share() -> None:
    spec = _spec("google/gemma-3-27b-it")
    plan = vllm_mem.plan(spec, gpu="H100-80GB", max_model_len=8192)
    vision_bytes = (416_866_032 + 6_194_304) * BF16_BYTES
    assert plan.vision_encoder_bytes == vision_bytes
    assert plan.ranks[0].vision_encoder_bytes == vision_bytes
    assert plan.weights_bytes == spec.weight_bytes()  # the share is inside "weights", not added
    report = str(plan)
    line = next(line for line in report.splitlines() if "of which vision encoder" in line)
    assert "0.79" in line and "siglip" in line  # 846,120,672 bytes = 0.79 GiB
    entry = plan.to_dict()["vision_encoder"]
    assert entry["bytes"] == vision_bytes
    assert entry["fraction_of_device"] == round(vision_bytes / plan.total_memory_bytes, 6)
    html = plan._repr_html_()
    assert "vision encoder (in weights)" in html and "0.79 GiB" in html


def test_mxfp4_backend_is_checked_and_only_changes_mxfp4_experts() -> None:
    gemma = _spec("google/gemma-3-27b-it")
    assert gemma.weight_bytes(mxfp4_backend="marlin") == gemma.weight_bytes()  # not an mxfp4 model
    with pytest.raises(ValueError, match="mxfp4_backend.*triton"):
        gemma.weight_bytes(mxfp4_backend="cutlass")
    with pytest.raises(TypeError, match="mxfp4_backend"):
        gemma.weight_breakdown(mxfp4_backend=None)  # type: ignore[arg-type]
    # gpt-oss-20b (mxfp4 experts): Marlin pads the hidden size to 256 and the intermediate to 128,
    # Triton the intermediate to 64 only (vllm/model_executor/layers/quantization/mxfp4.py).
    oss = ModelSpec.from_hf_config("openai/gpt-oss-20b")
    assert oss.weight_bytes(mxfp4_backend="marlin") > oss.weight_bytes(mxfp4_backend="triton")
    assert oss.weight_bytes(mxfp4_backend="triton") == oss.weight_bytes()


@pytest.mark.parametrize("name", ["google/gemma-3-4b-it", "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
                                  "Qwen/Qwen2.5-VL-7B-Instruct", "meta-llama/Llama-4-Scout-17B-16E-Instruct"])
def test_bundled_vision_language_configs_are_the_collected_files(name: str) -> None:
    assert name in vllm_mem.bundled_model_configs()
    bundled = ModelSpec.from_hf_config(name)
    assert bundled.vision is not None
    # the encoder's profile run is planned for every bundled tower (test_multimodal_profile*.py;
    # Llama-4-Scout's since its processor got a rule): no caveat
    assert bundled.caveats == []
    assert bundled.num_parameters() == _spec(name).num_parameters()
