#!/usr/bin/env python3
"""Writes the seed corpora and dictionaries of the libFuzzer harnesses (run once; outputs are
committed, so CI needs neither PyYAML nor this script).

    python3 tests/fuzz/make_corpus.py

- fuzz_model_config: each bundled config.json (python/vllm_mem/configs) behind a block of option
  bytes (fuzz_options.h: kOptionBytes), once with all-zero options (the usual defaults) and once
  with deterministic pseudo-random options, plus a few hand-written edge configs;
- fuzz_stage_config: each stage example (python/vllm_mem/examples/stages/*.yaml) converted to
  JSON the way the Python API hands it to the core, with the same two option blocks;
- fuzz_json: every JSON document above without option bytes;
- fuzz_gpu_name: GPU names and aliases quoted in core/plan/gpu_catalog.cc, and a few spellings.
Dictionaries: the keys seen in the bundled configs and stage files (config.dict, stage.dict).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
FUZZ = ROOT / "tests" / "fuzz"
OPTION_BYTES = 64  # fuzz_options.h: kOptionBytes


def write(folder: str, data: bytes) -> None:
    out = FUZZ / "corpus" / folder
    out.mkdir(parents=True, exist_ok=True)
    (out / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def option_blocks(seed: str) -> list[bytes]:
    rng = random.Random(seed)
    return [bytes(OPTION_BYTES), bytes(rng.randrange(256) for _ in range(OPTION_BYTES))]


def keys(value: object, out: set[str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(str(k))
            keys(v, out)
    elif isinstance(value, list):
        for v in value:
            keys(v, out)


def write_dict(name: str, words: set[str], extra: list[str]) -> None:
    # Keys as quoted JSON strings ("\"hidden_size\""), tokens as they are.
    lines = ['"' + json.dumps('"' + w + '"')[1:-1] + '"' for w in sorted(words)]
    lines += ['"' + json.dumps(t)[1:-1] + '"' for t in extra]
    (FUZZ / name).write_text("# libFuzzer dictionary (tests/fuzz/make_corpus.py)\n" + "\n".join(lines) + "\n")


def main() -> None:
    json_tokens = ["{", "}", "[", "]", ":", ",", "true", "false", "null", "-1", "0", "1e309",
                   "9223372036854775807", "9223372036854775808", "-9223372036854775809", "1.5",
                   "0.0", "-0.0", "1e-320", "\\u0000", "\\ud800"]
    config_keys: set[str] = set()
    for path in sorted((ROOT / "python" / "vllm_mem" / "configs").glob("*.json")):
        text = path.read_bytes()
        keys(json.loads(text), config_keys)
        write("fuzz_json", text)
        for block in option_blocks(path.name):
            write("fuzz_model_config", block + text)
    edge_configs = [
        {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
         "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 1000,
         "max_position_embeddings": 4096, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                                           "original_max_position_embeddings": 1024}},
        {"model_type": "mistral", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 1,
         "num_hidden_layers": 3, "intermediate_size": 128, "vocab_size": 1000, "sliding_window": 16,
         "max_position_embeddings": 4096,
         "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": True}},
    ]
    for config in edge_configs:
        text = json.dumps(config).encode()
        keys(config, config_keys)
        write("fuzz_json", text)
        for block in option_blocks(text.decode()):
            write("fuzz_model_config", block + text)

    stage_keys: set[str] = set()
    for path in sorted((ROOT / "python" / "vllm_mem" / "examples" / "stages").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        keys(doc, stage_keys)
        text = json.dumps(doc).encode()
        write("fuzz_json", text)
        for block in option_blocks(path.name):
            write("fuzz_stage_config", block + text)

    catalog = (ROOT / "csrc" / "core" / "plan" / "gpu_catalog.cc").read_text()
    names = {m for m in re.findall(r'"([^"\\]{1,40})"', catalog)
             if re.search(r"\d", m) and not m.endswith(".h") and " of " not in m}
    names |= {"h100", "NVIDIA A100-SXM4-80GB", "a100 40gb", "L4", "MI300X", "RTX 4090", "H100 80GB",
              "Tesla T4", "nvidia geforce rtx 3090", "0,1", "FULL_AND_PIECEWISE", "none"}
    for name in sorted(names):
        write("fuzz_gpu_name", name.encode())

    write_dict("config.dict", config_keys, json_tokens + ["rope_scaling", "text_config",
               "quantization_config", "group_size", "layer_types", "sliding_window_pattern",
               "kv_lora_rank", "n_routed_experts", "num_local_experts", "head_dim", "factor"])
    write_dict("stage.dict", stage_keys, json_tokens + ["stage_args", "stages", "engine_args",
               "runtime", "devices", "cpu", "0,1", "stage_id"])
    write_dict("json.dict", set(), json_tokens)


if __name__ == "__main__":
    main()
