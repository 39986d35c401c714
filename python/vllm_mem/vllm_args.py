"""vLLM's own command line, read as vLLM reads it and planned: paste ``vllm serve MODEL [flags]``.

:func:`plan_from_vllm_args` plans exactly the start-up a ``vllm serve`` command line would make;
:func:`parse_vllm_args` only reads it. The flag spellings are vLLM's (``vllm/engine/arg_utils.py``
and its ``FlexibleArgumentParser``): ``--max_model_len`` is ``--max-model-len``, ``--flag=value``
and ``--flag value`` are the same, ``32k`` is 32,000 and ``32K`` is 32,768 where vLLM reads a
"human-readable" integer, ``--max-model-len -1`` / ``auto`` is vLLM's auto-fit (from v0.14: the rule
``max_model_len_auto``), ``--dtype`` takes vLLM's choices only (``bf16`` is refused as vLLM refuses it).

Every flag falls in one of three sets (docs/vllm_command_line.md lists them):

- modelled: mapped to a :func:`vllm_mem.plan` keyword;
- no effect on start-up memory (``--host``, ``--port``, ``--api-key``...): accepted and listed
  in :attr:`VllmCommand.ignored`, so a reader sees what was not read;
- changes memory in a way the planner does not model yet (``--num-gpu-blocks-override``,
  ``--enable-expert-parallel``...): refused by name, never silently dropped, since a plan
  without it would be a wrong number presented as right.

A flag in none of the sets is refused as vLLM refuses an unknown one ("unrecognized arguments").
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from . import _limits as L
from . import _validate as V
from .errors import NotModelledError

__all__ = ["VllmCommand", "VllmCommandPlan", "parse_vllm_args", "plan_from_vllm_args"]

#: vLLM's --dtype choices (vllm/config/model.py ModelDType); "bf16" is not one.
DTYPE_CHOICES = ("auto", "half", "float16", "bfloat16", "float", "float32")

#: Most tokens a command line may hold (an honest one has a few dozen).
_MAX_TOKENS = 1000

# --- the flag table --------------------------------------------------------------------------
# kind: how the value is read. "int", "hint" (vLLM's human_readable_int), "len" (max-model-len:
# human_readable_int or -1/auto), "float", "bool" (--x / --no-x, no value), "choice", "json",
# "str", "many" (nargs="+").


@dataclass(frozen=True)
class _Flag:
    field: str                      # vLLM's EngineArgs field, as the "non-default args" line names it
    kind: str
    spellings: tuple[str, ...]      # long form first
    choices: tuple[str, ...] = ()


def _f(field_name: str, kind: str, *short: str, choices: tuple[str, ...] = ()) -> _Flag:
    return _Flag(field_name, kind, ("--" + field_name.replace("_", "-"), *short), choices)


#: Flags mapped to a plan() keyword.
_MODELLED = (
    _f("model", "str"),
    _f("max_model_len", "len"),
    _f("tensor_parallel_size", "int", "-tp"),
    _f("pipeline_parallel_size", "int", "-pp"),
    _f("decode_context_parallel_size", "int", "-dcp"),
    _f("gpu_memory_utilization", "float"),
    _f("max_num_seqs", "int"),
    _f("max_num_batched_tokens", "hint"),
    _f("kv_cache_dtype", "str"),
    _f("kv_cache_dtype_skip_layers", "many"),
    _f("block_size", "int"),
    _f("enforce_eager", "bool"),
    _f("speculative_config", "json"),
    # vLLM's parser takes unique prefixes, and its own suggestion line spells this one short.
    _f("kv_cache_memory_bytes", "hint", "--kv-cache-memory"),
    _f("quantization", "str", "-q"),
    _f("dtype", "choice", choices=DTYPE_CHOICES),
    _f("compilation_config", "json", "-O"),
    _f("revision", "str"),
    _f("cpu_offload_gb", "float"),
    _f("skip_mm_profiling", "bool"),
    _f("language_model_only", "bool"),
    _f("mm_processor_cache_gb", "float"),
    _f("enable_lora", "bool"),
    _f("max_loras", "int"),
    _f("max_lora_rank", "int"),
    _f("lora_dtype", "str"),
    _f("fully_sharded_loras", "bool"),
    _f("max_cpu_loras", "int"),
    _f("enable_prefix_caching", "bool"),
    _f("mamba_cache_mode", "str"),
    # Only its default is accepted (engine_args_to_plan_keywords).
    _f("enable_chunked_prefill", "bool"),
    _f("limit_mm_per_prompt", "json"),
    _f("mm_processor_kwargs", "json"),
)

#: Flags that do not change start-up GPU memory: accepted, listed as ignored.
_NO_EFFECT = (
    _f("host", "str"), _f("port", "int"), _f("uds", "str"), _f("api_key", "str"),
    _f("served_model_name", "many"), _f("trust_remote_code", "bool"),
    _f("disable_log_requests", "bool"), _f("enable_log_requests", "bool"), _f("disable_log_stats", "bool"),
    _f("uvicorn_log_level", "str"), _f("disable_uvicorn_access_log", "bool"), _f("max_log_len", "int"),
    _f("tokenizer", "str"), _f("tokenizer_mode", "str"), _f("tokenizer_revision", "str"),
    _f("code_revision", "str"), _f("chat_template", "str"), _f("chat_template_content_format", "str"),
    _f("response_role", "str"), _f("enable_auto_tool_choice", "bool"), _f("tool_call_parser", "str"),
    _f("reasoning_parser", "str"), _f("ssl_keyfile", "str"), _f("ssl_certfile", "str"),
    _f("ssl_ca_certs", "str"), _f("root_path", "str"), _f("allowed_origins", "json"),
    _f("allowed_methods", "json"), _f("allowed_headers", "json"), _f("allow_credentials", "bool"),
    _f("middleware", "str"), _f("disable_fastapi_docs", "bool"), _f("enable_request_id_headers", "bool"),
    _f("return_tokens_as_token_ids", "bool"), _f("enable_prompt_tokens_details", "bool"),
    _f("seed", "int"), _f("max_logprobs", "int"), _f("download_dir", "str"), _f("load_format", "str"),
    _f("config_format", "str"), _f("generation_config", "str"), _f("swap_space", "float"),
    _f("distributed_executor_backend", "str"), _f("disable_custom_all_reduce", "bool"),
    _f("data_parallel_size", "int", "-dp"), _f("scheduling_policy", "str"), _f("async_scheduling", "bool"),
    _f("disable_frontend_multiprocessing", "bool"), _f("api_server_count", "int"),
    _f("otlp_traces_endpoint", "str"), _f("collect_detailed_traces", "str"), _f("hf_token", "str"),
    _f("max_parallel_loading_workers", "int"), _f("worker_extension_cls", "str"), _f("log_config_file", "str"),
    _f("disable_mm_preprocessor_cache", "bool"), _f("guided_decoding_backend", "str"),
    _f("structured_outputs_config", "json"), _f("override_generation_config", "json"),
    # Adapters named at start-up are read into host memory; a request copies one into a slot
    # --max-loras already reserved (vllm/lora/worker_manager.py).
    _f("lora_modules", "many"),
)

#: Flags that change memory in a way the planner does not model yet: refused by name.
_NOT_MODELLED = {
    "num_gpu_blocks_override": "a fixed KV block count",
    "enable_expert_parallel": "expert parallelism's placement of MoE weights",
    "hf_overrides": "config overrides (they can change any layer size)",
    "rope_scaling": "a rope-scaled context length", "rope_theta": "a rope-scaled context length",
    "max_seq_len_to_capture": "the CUDA-graph capture limit of older releases",
    "cuda_graph_sizes": "explicit CUDA-graph sizes of this spelling (use -O '{\"cudagraph_capture_sizes\": [...]}')",
    "kv_transfer_config": "KV-cache transfer buffers", "kv_offloading_size": "KV offloading buffers",
    "mm_encoder_tp_mode": "the vision encoder's split",
    "data_parallel_size_local": "local data parallelism", "optimization_level": "optimization levels (their "
    "CUDA-graph settings differ by release; give -O as JSON or --enforce-eager)",
    "disable_hybrid_kv_cache_manager": "the hybrid KV-cache manager switched off",
    "max_num_partial_prefills": "partial prefills", "long_prefill_token_threshold": "partial prefills",
    "calculate_kv_scales": "KV scales",
    "prefill_context_parallel_size": "prefill context parallelism",
    # Dual-batch overlap (PR #23693, docs/design/dbo.md): each of two microbatches runs in its own
    # thread with its own CUDA graphs (UBatchWrapper); for data + expert parallel MoE deployments.
    "enable_dbo": "dual-batch overlap's per-microbatch CUDA graphs",
    "dbo_decode_token_threshold": "dual-batch overlap", "dbo_prefill_token_threshold": "dual-batch overlap",
}

#: -O / --compilation-config keys: planned, no memory effect, or anything else refused.
_COMPILATION_PLANNED = ("cudagraph_mode", "cudagraph_capture_sizes", "max_cudagraph_capture_size")
_COMPILATION_NO_EFFECT = ("backend", "custom_ops", "splitting_ops", "compile_sizes", "inductor_compile_config",
                          "inductor_passes", "pass_config", "use_inductor", "debug_dump_path", "cache_dir",
                          "cudagraph_num_of_warmups", "compile_cache_save_format", "use_inductor_graph_partition",
                          "level", "mode")
_CUDAGRAPH_MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")

_BY_SPELLING: dict[str, tuple[_Flag, str]] = {}
for _flag in _MODELLED:
    for _s in _flag.spellings:
        _BY_SPELLING[_s] = (_flag, "modelled")
for _flag in _NO_EFFECT:
    for _s in _flag.spellings:
        _BY_SPELLING[_s] = (_flag, "ignored")
_BY_FIELD: dict[str, tuple[_Flag, str]] = {f.field: (f, how) for f, how in _BY_SPELLING.values()}
_BY_FIELD["model_tag"] = (_Flag("model", "str", ("MODEL",)), "modelled")  # the positional's field

# Leading words of a pasted command that are the program, not its arguments.
_PROGRAMS = (("vllm", "serve"), ("serve",), ("python", "-m", "vllm.entrypoints.openai.api_server"),
             ("python3", "-m", "vllm.entrypoints.openai.api_server"), ("vllm",))


def _not_modelled(flag: str, why: str) -> NoReturn:
    """A flag that changes start-up memory in a way the planner does not model: refused by name
    (NotModelledError, a NotImplementedError, as for a model family without rules), never planned
    without it."""
    raise NotModelledError(V.clip(f"{flag}: not modelled yet ({why})", L.MAX_MESSAGE_CHARS), flag)


def flag_name(field_name: str) -> str:
    """The long flag of an EngineArgs field (``max_model_len`` -> ``--max-model-len``)."""
    return "--" + field_name.replace("_", "-")


# --- values, as vLLM reads them ---------------------------------------------------------------

_HUMAN_INT = re.compile(r"(\d{1,20}(?:\.\d{1,20})?)([kKmMgGtT])")
_PLAIN_INT = re.compile(r"[+-]?\d{1,20}")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def human_readable_int(text: str, flag: str) -> int:
    """vLLM's ``human_readable_int``: lowercase k/m/g/t decimal (``25.6k`` = 25,600), uppercase
    K/M/G/T binary (``32K`` = 32,768, whole numbers only), else a plain integer."""
    value = text.strip()
    m = _HUMAN_INT.fullmatch(value)
    if m:
        number, suffix = m.groups()
        if suffix in _DECIMAL:
            return int(float(number) * _DECIMAL[suffix])
        if "." in number:  # vLLM's own refusal and hint
            raise V.bad_value(flag, f"a whole number with a binary suffix (decimals are not allowed with binary "
                                    f"suffixes like {suffix}; did you mean {number}{suffix.lower()}?)", text)
        return int(number) * _BINARY[suffix]
    if not _PLAIN_INT.fullmatch(value):
        raise V.bad_value(flag, "an integer, optionally with k/m/g (x1000) or K/M/G (x1024) such as 32k or 32K",
                          text)
    return int(value)


def _int(text: str, flag: str) -> int:
    if not _PLAIN_INT.fullmatch(text.strip()):
        raise V.bad_value(flag, "an integer", text)
    return int(text)


def _float(text: str, flag: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise V.bad_value(flag, "a number", text) from None


def _json(text: str, flag: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise V.bad_value(flag, "a JSON object", text) from None


def _value(flag: _Flag, text: str, spelling: str) -> Any:
    text = V.text(text, spelling, max_chars=L.MAX_PATH_BYTES, what="a value")
    if flag.kind == "int":
        return _int(text, spelling)
    if flag.kind == "hint":
        return human_readable_int(text, spelling)
    if flag.kind == "len":
        if text.strip() == "-1" or text.strip().lower() == "auto":
            return -1
        return human_readable_int(text, spelling)
    if flag.kind == "float":
        return _float(text, spelling)
    if flag.kind == "choice":
        if text not in flag.choices:  # argparse's words
            raise V.bad_value(spelling, "one of " + ", ".join(flag.choices), text)
        return text
    if flag.kind == "json":
        if flag.field == "compilation_config" and re.fullmatch(r"\d", text.strip()):
            _not_modelled(f"{spelling}{text.strip()}", "optimization levels set CUDA graphs differently by release; "
                          "give the compilation config as JSON, e.g. -O '{\"cudagraph_mode\": \"PIECEWISE\"}', or "
                          "--enforce-eager")
        if flag.field == "speculative_config":
            return text  # plan() reads the JSON text itself, with its own messages
        return _json(text, spelling) if text.lstrip().startswith(("{", "[")) else text
    return text


# --- the command ------------------------------------------------------------------------------


@dataclass(frozen=True)
class VllmCommand:
    """A ``vllm serve`` command line as vLLM would read it.

    Attributes
    ----------
    model : str
        The model (the positional ``MODEL`` or ``--model``).
    engine_args : dict
        Each flag given, by vLLM's EngineArgs field name (``max_model_len``), with the value
        vLLM would hold (``32k`` -> 32000), as its "non-default args" line prints them.
    ignored : tuple of str
        The flags given that do not change start-up GPU memory, as typed (``--port 8000``).
    plan_keywords : dict
        The :func:`vllm_mem.plan` keywords the modelled flags become.
    """

    model: str
    engine_args: dict[str, Any]
    ignored: tuple[str, ...] = ()
    plan_keywords: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "engine_args": dict(self.engine_args), "ignored": list(self.ignored),
                "plan_keywords": dict(self.plan_keywords)}


def _strip_program(tokens: list[str]) -> list[str]:
    for program in _PROGRAMS:
        if tuple(tokens[:len(program)]) == program:
            return tokens[len(program):]
    return tokens


def _normalise(token: str) -> tuple[str, str | None]:
    """(flag, inline value): vLLM's FlexibleArgumentParser turns ``--max_model_len=8`` into
    ``--max-model-len`` with ``8``; the underscores of the value are kept."""
    if token.startswith("--"):
        key, eq, value = token.partition("=")
        return "--" + key[2:].replace("_", "-"), (value if eq else None)
    if token.startswith("-O") and len(token) > 2 and token[2] not in "=.":  # -O3, -O{"...": ...}
        return "-O", token[2:]
    key, eq, value = token.partition("=")
    return key, (value if eq else None)


def _dotted(flag: str) -> tuple[str, str] | None:
    """``--compilation-config.cudagraph_mode`` / ``-O.cudagraph_mode``: (base flag, key)."""
    for base in ("--compilation-config.", "-O."):
        if flag.startswith(base):
            return ("--compilation-config", flag[len(base):].replace("-", "_"))
    return None


def parse_vllm_args(argv: Sequence[str] | str) -> VllmCommand:
    """Read a ``vllm serve`` command line (a list of arguments as the shell passes them, or one
    string split as a POSIX shell would) as vLLM reads it. ``vllm serve`` / ``serve`` at the
    front are skipped.

    Raises
    ------
    ValueError
        Naming the flag: an unknown flag ("unrecognized arguments"), a value vLLM would refuse
        (``--dtype bf16``), a flag that changes memory in a way not modelled yet, no model.
    """
    if isinstance(argv, str):
        import shlex

        text = V.text(argv, "argv", max_chars=L.MAX_MESSAGE_CHARS * 100, what="a command line")
        try:
            tokens = shlex.split(text)
        except ValueError as exc:
            raise V.bad_value("argv", f"a command line a shell can split ({exc})", text) from None
    else:
        tokens = [V.text(t, f"argv[{n}]", max_chars=L.MAX_PATH_BYTES, what="a command-line argument")
                  for n, t in enumerate(V.items(argv, "argv", max_items=_MAX_TOKENS))]
    if len(tokens) > _MAX_TOKENS:
        raise V.bad_value("argv", f"at most {_MAX_TOKENS} arguments", f"{len(tokens)} arguments")
    tokens = _strip_program(tokens)
    engine: dict[str, Any] = {}
    ignored: list[str] = []
    positionals: list[str] = []
    compilation: dict[str, Any] = {}
    n = 0
    while n < len(tokens):
        token = tokens[n]
        start = n
        n += 1
        if not token.startswith("-") or _PLAIN_INT.fullmatch(token):
            positionals.append(token)
            continue
        spelling, inline = _normalise(token)
        dotted = _dotted(spelling)
        if dotted is not None:
            if inline is None:
                if n >= len(tokens):
                    V.fail(spelling, "expected one argument")
                inline, n = tokens[n], n + 1
            try:  # vLLM reads a dotted value as JSON where it parses, else as text
                compilation[dotted[1]] = json.loads(inline)
            except (ValueError, RecursionError):
                compilation[dotted[1]] = inline
            continue
        no_form = spelling.startswith("--no-") and spelling[:2] + spelling[5:] in _BY_SPELLING
        base = spelling[:2] + spelling[5:] if no_form else spelling
        entry = _BY_SPELLING.get(base)
        field_name = base[2:].replace("-", "_") if base.startswith("--") else base
        if entry is None:
            if field_name in _NOT_MODELLED:
                _not_modelled(base, f"{_NOT_MODELLED[field_name]} change start-up memory in a way vllm-mem does "
                                    "not plan; leave it out to plan without it")
            V.fail("unrecognized arguments", f"{V.clip(token, 80)} (not a vLLM flag vllm-mem knows; "
                                             "docs/vllm_command_line.md lists the flags it reads)")
        flag, how = entry
        if flag.kind == "bool":
            if inline is not None:
                V.fail(base, f"ignored explicit argument {inline!r}")
            value: Any = not no_form
        elif no_form:
            V.fail("unrecognized arguments", V.clip(token, 80))
        else:
            if flag.kind == "many":
                values = [] if inline is None else [inline]
                while n < len(tokens) and not tokens[n].startswith("-"):
                    values.append(tokens[n])
                    n += 1
                if not values:
                    V.fail(base, "expected at least one argument")
                value = values
            else:
                if inline is None:
                    if n >= len(tokens):
                        V.fail(base, "expected one argument")
                    inline, n = tokens[n], n + 1
                value = _value(flag, inline, base)
        if how == "ignored":
            ignored.append(" ".join(tokens[start:n]))
        if flag.field == "compilation_config":
            if not isinstance(value, dict):
                raise V.bad_value(base, "a JSON object", value)
            compilation.update(value)
            continue
        engine[flag.field] = value  # the last one wins, as in argparse
    if compilation:
        engine["compilation_config"] = compilation
    if len(positionals) > 1:
        V.fail("unrecognized arguments", V.clip(" ".join(positionals[1:]), 120))
    model = positionals[0] if positionals else None
    if model is not None and engine.get("model") not in (None, model):
        V.fail("--model", f"the positional MODEL {model!r} and --model {engine['model']!r} differ; give one")
    model = model or engine.get("model")
    if not model:
        V.fail("MODEL", "give the model: vllm serve MODEL [flags]")
    engine["model"] = model
    return VllmCommand(model=model, engine_args=engine, ignored=tuple(ignored),
                       plan_keywords=engine_args_to_plan_keywords(engine))


@functools.cache
def direct_engine_args() -> tuple[str, ...]:
    """The engine arguments that are plan() keywords of the same name and value: every row of the
    settings table that mirrors a vLLM flag (the table says which), but ``limit_mm_per_prompt``,
    whose vLLM value is a per-modality mapping (:func:`_image_limit`); and ``speculative_config``,
    plan()'s own keyword."""
    from . import _C

    rows = (row["name"] for row in _C.plan_settings() if row["flag"] and row["name"] != "limit_mm_per_prompt")
    return (*rows, "speculative_config")


def engine_args_to_plan_keywords(engine: Mapping[str, Any], *, flag_of: Any = flag_name) -> dict[str, Any]:
    """The :func:`vllm_mem.plan` keywords of vLLM engine arguments (by EngineArgs field name).
    Values the planner cannot honour raise ``ValueError`` naming the flag (``flag_of(field)``)."""
    kw: dict[str, Any] = {}
    for name in direct_engine_args():
        value = engine.get(name)
        if value is None:
            continue
        if name == "dtype" and value not in DTYPE_CHOICES:
            raise V.bad_value(flag_of(name), "one of " + ", ".join(DTYPE_CHOICES), value)
        if name == "kv_cache_memory_bytes" and value == 0:
            continue  # vLLM reads 0 as "not set"
        kw[name] = value
    for name in ("limit_mm_per_prompt", "mm_processor_kwargs"):
        value = engine.get(name)
        if value in (None, {}, ""):
            continue
        if not isinstance(value, Mapping):  # vLLM's flags take a JSON object (the int form is this API's)
            raise V.bad_value(flag_of(name), 'a JSON object such as {"image": 2}', value)
        V.setting(name, dict(value), flag_of(name))  # each key typed by the settings row, named by the flag
        kw[name] = dict(value)
    if engine.get("enable_chunked_prefill") is False:
        _not_modelled(flag_of("enable_chunked_prefill") + "=False", "the unchunked scheduler's batch sizes differ")
    compilation = engine.get("compilation_config")
    if compilation:
        if not isinstance(compilation, Mapping):
            raise V.bad_value(flag_of("compilation_config"), "a JSON object", compilation)
        for key, value in compilation.items():
            where = f"{flag_of('compilation_config')}.{key}"
            if key == "cudagraph_mode":
                mode = str(value).upper()
                if mode not in _CUDAGRAPH_MODES:
                    raise V.bad_value(where, "one of " + ", ".join(_CUDAGRAPH_MODES), value)
                kw["cudagraph_mode"] = mode
            elif key == "cudagraph_capture_sizes":
                kw["cudagraph_capture_sizes"] = V.items(value, where, max_items=L.MAX_CUDAGRAPH_CAPTURE_SIZES)
            elif key == "max_cudagraph_capture_size":
                kw["max_cudagraph_capture_size"] = value
            elif key in ("level", "mode") and value not in (3, "3", "VLLM_COMPILE"):
                _not_modelled(where, f"{V.show(value)}: only the default compilation, 3, is planned")
            elif key not in _COMPILATION_NO_EFFECT:
                _not_modelled(where, f"planned keys: {', '.join(_COMPILATION_PLANNED)}")
    return kw


@dataclass(frozen=True)
class VllmCommandPlan:
    """The plan of a ``vllm serve`` command line: :attr:`plan` (a :class:`StartupPlan`) and the
    command as read. Attribute reads the command does not have go to the plan (``.fits``)."""

    command: VllmCommand
    plan: Any  # StartupPlan
    #: ``--max-model-len -1`` / ``auto``: vLLM's "Auto-fit max_model_len: ..." line of the plan ("" when
    #: not asked, or when not one token fits: the plan's failure_message is then vLLM's error)
    auto_fit_note: str = ""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.plan, name)

    def report(self) -> str:
        lines = [f"vLLM command: vllm serve {self.command.model}"]
        given = {k: v for k, v in self.command.engine_args.items() if k != "model"}
        if given:
            lines.append("  read: " + ", ".join(f"{k}={v!r}" for k, v in given.items()
                                                if k not in _ignored_fields(self.command)))
        lines.append("  ignored (no effect on start-up memory): " + (", ".join(self.command.ignored) or "none"))
        if self.auto_fit_note:
            lines.append("  " + self.auto_fit_note)
        return "\n".join(lines) + "\n\n" + self.plan.report()

    def __str__(self) -> str:
        return self.report()

    def __repr__(self) -> str:
        return f"<VllmCommandPlan {self.command.model}: {self.plan!r}, {len(self.command.ignored)} flags ignored>"

    def to_dict(self) -> dict[str, Any]:
        out = self.plan.to_dict()
        out["vllm_command"] = self.command.to_dict()
        out["vllm_command"]["auto_fit_note"] = self.auto_fit_note
        return out


def _ignored_fields(command: VllmCommand) -> set[str]:
    return {f for f in command.engine_args if _BY_FIELD.get(f, (None, ""))[1] == "ignored"}


#: plan() keywords the command's flags became: an error naming one names the flag instead.
_KEYWORD_FLAGS = {name: flag_name(name) for name in (
    "max_model_len", "tensor_parallel_size", "pipeline_parallel_size", "decode_context_parallel_size",
    "gpu_memory_utilization", "max_num_seqs",
    "max_num_batched_tokens", "kv_cache_dtype", "block_size", "enforce_eager", "speculative_config",
    "kv_cache_memory_bytes", "quantization", "dtype", "cpu_offload_gb", "limit_mm_per_prompt",
    "mm_processor_kwargs", "skip_mm_profiling", "language_model_only", "mm_processor_cache_gb",
    "enable_lora", "max_loras", "max_lora_rank", "lora_dtype", "fully_sharded_loras", "max_cpu_loras",
    "mamba_cache_mode")}
_KEYWORD_FLAGS.update(cudagraph_mode="--compilation-config.cudagraph_mode",
                      cudagraph_capture_sizes="--compilation-config.cudagraph_capture_sizes",
                      max_cudagraph_capture_size="--compilation-config.max_cudagraph_capture_size")


def _plan_naming_flags(make_plan: Any, spec: Any, common: dict[str, Any], kw: dict[str, Any]) -> Any:
    try:
        return make_plan(spec, **common, **kw)
    except ValueError as exc:
        # The typed error's field (vllm_mem.errors) is the keyword; its head names the flag.
        named = V.renamed(exc, {name: _KEYWORD_FLAGS[name] for name in kw if name in _KEYWORD_FLAGS})
        if named is None:
            raise
        raise named from None


def plan_from_vllm_args(argv: Sequence[str] | str, gpu: str | None = None, *,
                        total_memory_bytes: int | None = None, free_memory_bytes: int | None = None,
                        gpu_count: int | None = None, vllm_version: str | None = None,
                        allow_long_max_model_len: bool | None = None, allow_unknown: bool = False,
                        weights_source: str = "config", model: Any = None) -> VllmCommandPlan:
    """Plan the start-up ``vllm serve MODEL [flags]`` would make on ``gpu``.

    ``argv`` is the command line (``["vllm", "serve", "org/name", "--max-model-len", "32k"]``, or
    one string). The GPU, the vLLM release (default: the installed one, else the newest known)
    and the other arguments are vllm_mem's, as for :func:`vllm_mem.plan`. ``model`` replaces the
    command's model source (a ModelSpec, a config dict or path) while keeping its flags.

    Returns
    -------
    VllmCommandPlan
        ``.plan`` is exactly ``vllm_mem.plan(model, gpu, **command.plan_keywords, ...)``.

    Raises
    ------
    ValueError
        Naming the flag, as :func:`parse_vllm_args` and :func:`vllm_mem.plan` raise.
    """
    from .model_spec import ModelSpec
    from .planner import plan as make_plan

    command = parse_vllm_args(argv)
    source = command.model if model is None else model
    if isinstance(source, ModelSpec):
        spec = source
    elif command.engine_args.get("revision") and model is None:
        spec = ModelSpec.from_pretrained(source, revision=command.engine_args["revision"],
                                         allow_unknown=allow_unknown, weights_source=weights_source)
    else:
        spec = ModelSpec.from_hf_config(source, allow_unknown=allow_unknown, weights_source=weights_source)
    kw = dict(command.plan_keywords)
    common = dict(gpu=gpu, total_memory_bytes=total_memory_bytes, free_memory_bytes=free_memory_bytes,
                  gpu_count=gpu_count, vllm_version=vllm_version, usage_context="server",
                  allow_long_max_model_len=allow_long_max_model_len)
    # --max-model-len -1 / auto goes to plan() as it is: the plan fits it as vLLM does.
    p = _plan_naming_flags(make_plan, spec, common, kw)
    note = p.auto_fit_line
    return VllmCommandPlan(command, p, note)
