"""Explain a vLLM start-up log: each figure vLLM printed beside the one the plan gives for the
same start-up, the difference, and for a failed start-up the change that fixes it.

:func:`explain_startup_log` reads the V1 lines of the releases the version profiles know
(``docs/vllm_command_line.md`` lists them): the "non-default args" line (the model and the
settings), "Model loading took", "Memory profiling takes ..." (or the older "model weights take
..." line), "Available KV cache memory", "GPU KV cache size", "Maximum concurrency", the CUDA-graph
lines, the hybrid block-size lines, the free-memory suggestion line, and the failures "... KV
cache is needed, which is larger than the available KV cache memory" / "max seq len ... larger
than the maximum number of tokens" / "No available memory for the cache blocks". It plans the
start-up those lines describe (:func:`vllm_mem.plan_from_vllm_args`), with the GPU's total
memory from the log where printed.

A log with none of these lines (truncated before the model loaded, or not a vLLM log) is a
``ValueError`` saying so: an explanation is never made from nothing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _limits as L
from . import _validate as V
from .units import GiB_bytes

__all__ = ["StartupLogExplanation", "TermComparison", "explain_startup_log", "read_startup_log"]

GiB = float(GiB_bytes)

#: Largest log read (a start-up log is tens of KiB; a day of serving logs is not a start-up).
MAX_LOG_BYTES = 64 << 20
#: Longest "non-default args" dict evaluated.
_MAX_ARGS_CHARS = 100_000

_NUM = r"(-?\d+(?:\.\d+)?)"

# (key, pattern): the first match of each wins, as vLLM prints each once per worker and rank 0's
# worker (or the engine core, for the capacity lines) prints first.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((k, re.compile(p)) for k, p in (
    ("version", r"vLLM API server version v?(\d+\.\d+(?:\.\d+)?)"),
    ("version", r"Initializing a V1 LLM engine \(v(\d+\.\d+(?:\.\d+)?)"),
    ("version", r"Initializing an LLM engine \(v(\d+\.\d+(?:\.\d+)?)"),
    ("weights_gib", r"Model loading took " + _NUM + r" ?GiB"),
    ("weights_gib", r"Loading model weights took " + _NUM + r" ?GB"),
    ("non_kv_gib", r"Total non KV cache memory: " + _NUM + r" ?GiB"),
    ("activation_gib", r"torch peak memory increase: " + _NUM + r" ?GiB"),
    ("non_torch_gib", r"non-torch forward increase memory: " + _NUM + r" ?GiB"),
    ("profile_weights_gib", r"weights memory: " + _NUM + r" ?GiB"),
    # Older releases' one-sentence profile (0.7-0.8).
    ("profile_weights_gib", r"model weights take " + _NUM + r" ?GiB"),
    ("non_torch_gib", r"non_torch_memory takes " + _NUM + r" ?GiB"),
    ("activation_gib", r"PyTorch activation peak memory takes " + _NUM + r" ?GiB"),
    ("available_kv_gib", r"the rest of the memory reserved for KV Cache is " + _NUM + r" ?GiB"),
    ("total_gib", r"total_gpu_memory \(" + _NUM + r" ?GiB\)"),
    ("utilization", r"x gpu_memory_utilization \(" + _NUM + r"\)"),
    ("available_kv_gib", r"Available KV cache memory: " + _NUM + r" ?GiB"),
    ("kv_tokens", r"GPU KV cache size: ([\d,]+) tokens"),
    ("max_model_len", r"Maximum concurrency for ([\d,]+) tokens per request"),
    ("max_concurrency", r"Maximum concurrency for [\d,]+ tokens per request: " + _NUM + r"x"),
    ("num_gpu_blocks", r"# GPU blocks: (\d+)"),
    ("num_gpu_blocks", r"num_gpu_blocks is: (\d+)"),
    ("cudagraph_estimate_gib", r"Estimated CUDA graph memory: " + _NUM + r" GiB total"),
    ("cudagraph_actual_gib", r"Graph capturing finished in \d+ secs?, took " + _NUM + r" GiB"),
    ("free_gib", r"Free memory on device \S*\s*\(" + _NUM + r"/"),
    ("total_gib", r"Free memory on device \S*\s*\(" + _NUM + r"/" + _NUM + r" GiB\)"),
    ("utilization", r"[Dd]esired GPU memory utilization (?:is )?\(" + _NUM + r", "),
    ("requested_gib", r"[Dd]esired GPU memory utilization (?:is )?\(" + _NUM + r", " + _NUM + r" GiB\)"),
    ("free_gib", r"Initial free memory: " + _NUM + r" ?GiB; Requested memory"),
    ("utilization", r"Requested memory: " + _NUM + r" \(util\)"),
    ("requested_gib", r"Requested memory: " + _NUM + r" \(util\), " + _NUM + r" ?GiB"),
    ("attention_block_size", r"Setting attention block size to (\d+) tokens"),
    ("mamba_padding_percent", r"Padding mamba page size by " + _NUM + r"%"),
    ("kv_needed_gib", r"\(" + _NUM + r" GiB KV cache is needed, which is larger than the available KV cache memory"),
    ("failed_available_gib", r"larger than the available KV cache memory \(" + _NUM + r" GiB\)"),
    ("failed_max_model_len", r"max seq len \((\d+)\)"),
    ("estimated_max_model_len", r"estimated maximum model length is (\d+)"),
    ("v0_max_tokens", r"larger than the maximum number of tokens that can be stored in KV cache \((\d+)\)"),
    ("no_blocks", r"(No available memory for the cache blocks)"),
    ("free_check_failed", r"(on startup is less than desired GPU memory utilization)"),
))
# Patterns whose second group is the value (the first is another key's).
_SECOND_GROUP = {"total_gib", "requested_gib"}


def _line_patterns(key: str) -> list[re.Pattern[str]]:
    return [p for k, p in _PATTERNS if k == key]


_NON_DEFAULT = re.compile(r"non-default args: (\{.*\})\s*$")


@dataclass(frozen=True)
class TermComparison:
    """One figure: what vLLM printed, what the plan gives, and the difference (planned - printed).

    ``unit`` is ``"GiB"``, ``"tokens"``, ``"blocks"``, ``"x"`` or ``"%"``; ``relative`` is the
    difference over the printed figure (``None`` when it printed 0)."""

    term: str
    printed: float
    planned: float | None
    unit: str
    log_line: str

    @property
    def difference(self) -> float | None:
        return None if self.planned is None else self.planned - self.printed

    @property
    def relative(self) -> float | None:
        if self.planned is None or self.printed == 0:
            return None
        return (self.planned - self.printed) / abs(self.printed)

    def to_dict(self) -> dict[str, Any]:
        return {"term": self.term, "printed": self.printed, "planned": self.planned, "unit": self.unit,
                "difference": self.difference, "relative": self.relative, "log_line": self.log_line}


@dataclass(frozen=True)
class StartupLogExplanation:
    """The log's figures beside the plan's (see :func:`explain_startup_log`).

    Attributes
    ----------
    terms : tuple of TermComparison
        Each figure the log printed, in start-up order.
    plan : StartupPlan
        The plan of the start-up the log describes.
    settings : dict
        The vLLM engine arguments planned with (from the log's "non-default args" line, the
        command given, and the lines that print a setting) and where the GPU total came from.
    failed : bool
        The log shows a failed start-up (a KV-cache or free-memory refusal).
    failure_line : str
        vLLM's failure message, as printed.
    fixes : tuple of str
        For a failed start-up: the changes that make it start (the plan's levers that fit, or
        vLLM's own estimate where the plan disagrees).
    notes : tuple of str
        What the comparison rests on: settings not printed (vLLM's defaults taken), the worker
        the per-GPU lines were matched to, keys of the args line not read.
    """

    terms: tuple[TermComparison, ...]
    plan: Any
    settings: dict[str, Any]
    failed: bool = False
    failure_line: str = ""
    fixes: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def term(self, name: str) -> TermComparison | None:
        return next((t for t in self.terms if t.term == name), None)

    def report(self) -> str:
        p = self.plan
        source = self.settings.get("vllm_version_source") or p.vllm_version_source
        out = [f"vLLM start-up log: {p._spec.name or p._spec.model_type}, vLLM {p.vllm_version} rules "
               f"({source}); {self.settings.get('gpu_source', '')}"]
        out.append(f"{'term':<28}{'printed':>14}{'planned':>14}{'difference':>14}")
        for t in self.terms:
            planned = "-" if t.planned is None else _fmt(t.planned, t.unit)
            diff = "-" if t.difference is None else _fmt(t.difference, t.unit, signed=True)
            if t.relative is not None and t.unit != "%":
                diff += f" ({t.relative * 100:+.1f}%)"
            out.append(f"  {t.term:<26}{_fmt(t.printed, t.unit):>14}{planned:>14}  {diff}")
        out.append("")
        if self.failed:
            out.append("start-up FAILED: " + self.failure_line)
            out.append("the plan: " + ("DOES NOT FIT at phase " + repr(p.failure_phase) if not p.fits
                                       else "fits (the plan and the log disagree; the log's figures decide)"))
            if self.fixes:
                out.append("what fixes it:")
                out.extend(f"  {n}. {fix}" for n, fix in enumerate(self.fixes, 1))
        else:
            out.append("start-up: reached the KV cache" if self.term("kv_tokens") or self.term("available_kv")
                       else "start-up: the log stops before the KV cache")
            out.append("the plan: " + ("fits" if p.fits else f"DOES NOT FIT at phase {p.failure_phase!r}"))
        for note in self.notes:
            out.append("note: " + note)
        return "\n".join(out) + "\n"

    def __str__(self) -> str:
        return self.report()

    def __repr__(self) -> str:
        worst = max((abs(t.relative) for t in self.terms if t.relative is not None), default=0.0)
        state = "failed start-up" if self.failed else "start-up"
        return (f"<StartupLogExplanation {state}: {len(self.terms)} terms, largest difference "
                f"{worst * 100:.1f}%, plan {'fits' if self.plan.fits else 'does not fit'}>")

    def to_dict(self) -> dict[str, Any]:
        return {"terms": [t.to_dict() for t in self.terms], "settings": dict(self.settings),
                "failed": self.failed, "failure_line": self.failure_line, "fixes": list(self.fixes),
                "notes": list(self.notes), "plan": self.plan.to_dict()}


def _fmt(value: float, unit: str, signed: bool = False) -> str:
    sign = "+" if signed else ""
    if unit in ("tokens", "blocks"):
        return f"{value:{sign},.0f}"
    if unit == "x":
        return f"{value:{sign}.2f}x"
    if unit == "%":
        return f"{value:{sign}.2f}%"
    return f"{value:{sign}.2f} GiB"


def read_startup_log(text: str) -> dict[str, Any]:
    """The figures of a vLLM start-up log, by name, with the line each came from (``lines``)
    and the "non-default args" dict (``engine_args``). Only the lines this module knows are read."""
    found: dict[str, Any] = {}
    lines: dict[str, str] = {}
    engine_args: dict[str, Any] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if engine_args is None:
            m = _NON_DEFAULT.search(line)
            if m:
                engine_args = _literal_args(m.group(1))
                lines["non_default_args"] = line
                continue
        for key, pattern in _PATTERNS:
            if key in found:
                continue
            m = pattern.search(line)
            if m:
                value = m.group(2 if key in _SECOND_GROUP else 1)
                found[key] = value
                lines[key] = line
    out: dict[str, Any] = {}
    for key, value in found.items():
        if key in ("no_blocks", "free_check_failed", "version"):
            out[key] = value
        elif key in ("kv_tokens", "max_model_len", "num_gpu_blocks", "attention_block_size", "failed_max_model_len",
                     "estimated_max_model_len", "v0_max_tokens"):
            out[key] = int(value.replace(",", ""))
        else:
            out[key] = float(value)
    out["lines"] = lines
    out["engine_args"] = engine_args
    return out


def _literal_args(text: str) -> dict[str, Any]:
    if len(text) > _MAX_ARGS_CHARS:
        raise V.bad_value("non-default args", f"a line of at most {_MAX_ARGS_CHARS} characters", text)
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        # A value vLLM printed with its repr (a config object) is not a literal: unreadable.
        raise V.bad_value("non-default args", "a Python dict of literals as vLLM prints it (a value printed as an "
                                              "object cannot be read; give the command with -- instead)",
                          text) from None
    if not isinstance(value, dict):
        raise V.bad_value("non-default args", "a dict", text)
    return value


def _gpu_from_total(total_gib: float) -> tuple[int, str, str]:
    """(total bytes, catalog name, source): the catalog GPU whose CUDA total prints as the log's
    2-decimal figure, when exactly one does; else the printed figure itself."""
    from .catalog import gpu_catalog

    matches = {(g.total_memory_bytes, g.name) for g in gpu_catalog()
               if round(g.total_memory_bytes / GiB, 2) == round(total_gib, 2)}
    if len(matches) == 1:
        total, name = next(iter(matches))
        return total, name, f"GPU {name} ({total_gib:.2f} GiB as the log prints it)"
    return int(round(total_gib * GiB)), "", f"GPU total {total_gib:.2f} GiB as the log prints it"


_ENGINE_KEYS_READ = {"model", "model_tag"}


def _engine_args_from_log(args: Mapping[str, Any], notes: list[str]) -> list[str]:
    """The non-default args dict as ``vllm serve`` flags, for the command-line reader (so the
    log and a pasted command are read by one set of rules). Keys the reader does not know are
    left out and named in the notes."""
    from .vllm_args import _BY_FIELD, _NOT_MODELLED, flag_name

    flags: list[str] = []
    unread: list[str] = []
    for key, value in args.items():
        if key in _ENGINE_KEYS_READ or value is None:
            continue
        entry = _BY_FIELD.get(key)
        if entry is None:
            if key in _NOT_MODELLED:
                flags.append(flag_name(key))  # refused by the reader, by name
            else:
                unread.append(key)
            continue
        flag = entry[0]
        name = flag_name(key)
        if flag.kind == "bool":
            flags.append(name if value else "--no-" + name[2:])
        elif flag.kind == "many":
            flags.extend([name, *[str(v) for v in (value if isinstance(value, list) else [value])]])
        elif isinstance(value, (dict, list)):
            import json

            flags.append(f"{name}={json.dumps(value)}")
        else:
            flags.append(f"{name}={value}")
    if unread:
        notes.append("keys of the non-default args line not read (unknown to vllm-mem): " + ", ".join(unread))
    return flags


def explain_startup_log(text: str, *, model: Any = None, gpu: str | None = None,
                        total_memory_bytes: int | None = None, vllm_version: str | None = None,
                        vllm_args: Sequence[str] | str | None = None,
                        allow_unknown: bool = False) -> StartupLogExplanation:
    """Explain a vLLM start-up log (its text): plan the same start-up and put each printed
    figure beside the planned one.

    Parameters
    ----------
    text : str
        The log (any prefix per line: vLLM's ``(EngineCore_DP0 pid=..) INFO ...`` is skipped).
    model : optional
        The model when the log has no "non-default args" line (a name, path, dict or ModelSpec);
        given with one, it replaces the log's model source (e.g. a local config.json).
    gpu, total_memory_bytes : optional
        The GPU, when the log prints no total (the "Free memory on device (free/total GiB)" line).
    vllm_version : str, optional
        The release; default: the log's banner, else the installed vllm, else the newest known.
    vllm_args : optional
        The ``vllm serve`` command that started it, when the log does not print its settings;
        its flags add to (and override) the log's "non-default args".

    Raises
    ------
    ValueError
        A log with no start-up memory line (truncated, not a vLLM log), an unreadable args
        line, or a setting the plan refuses (naming it).
    """
    from .vllm_args import parse_vllm_args, plan_from_vllm_args

    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    text = V.text(text, "text", max_chars=MAX_LOG_BYTES, what="the text of a vLLM start-up log")
    log = read_startup_log(text)
    memory_keys = ("weights_gib", "activation_gib", "available_kv_gib", "kv_tokens", "kv_needed_gib",
                   "v0_max_tokens", "no_blocks", "free_check_failed", "profile_weights_gib")
    if not any(k in log for k in memory_keys):
        what = ("it stops before the model loaded (only the settings line)" if log["engine_args"] is not None
                or log["lines"] else "no vLLM start-up line was found (is this a vLLM log?)")
        V.fail("log", f"nothing to explain: {what}; a start-up log has 'Model loading took', 'Memory profiling "
                      "takes', 'Available KV cache memory' or 'GPU KV cache size' lines")
    notes: list[str] = []
    merged: dict[str, Any] = {}
    log_model = None
    if log["engine_args"] is not None:
        merged.update(log["engine_args"])
        log_model = merged.pop("model", None) or merged.pop("model_tag", None)
        merged.pop("model_tag", None)
    command_model = None
    if vllm_args is not None:
        command = parse_vllm_args(vllm_args)
        command_model = command.model
        merged.update({k: v for k, v in command.engine_args.items() if k != "model"})
    name = command_model or log_model
    if model is None and name is None:
        V.fail("model", "the log prints no model (no 'non-default args' line): give the model (--model)")
    flags = _engine_args_from_log(merged, notes)
    # Settings vLLM printed elsewhere fill what the args did not say.
    if merged.get("max_model_len") is None:
        length = log.get("max_model_len") or log.get("failed_max_model_len")
        if length:
            flags.append(f"--max-model-len={length}")
    if merged.get("gpu_memory_utilization") is None and "utilization" in log:
        flags.append(f"--gpu-memory-utilization={log['utilization']}")
    if log["engine_args"] is None and vllm_args is None:
        notes.append("the log has no 'non-default args' line: settings it does not print (tensor/pipeline "
                     "parallel sizes, dtype...) take vLLM's defaults")
    # The GPU: named, else the total the log prints.
    gpu_source = f"GPU {gpu}" if gpu else ""
    if gpu is None and total_memory_bytes is None:
        if "total_gib" not in log:
            V.fail("--gpu", "the log prints no GPU total (no 'Free memory on device' line): give the GPU")
        total_memory_bytes, gpu_name, gpu_source = _gpu_from_total(log["total_gib"])
        gpu = gpu_name or None
        if gpu is not None:
            total_memory_bytes = None
    elif total_memory_bytes is not None:
        gpu_source = f"GPU total {total_memory_bytes / GiB:.2f} GiB as given"
    version = vllm_version or log.get("version")
    version_source = "asked" if vllm_version else ("the log's banner" if log.get("version") else "")
    result = plan_from_vllm_args(["vllm", "serve", str(name or "MODEL"), *flags], gpu,
                                 total_memory_bytes=total_memory_bytes, vllm_version=version,
                                 allow_unknown=allow_unknown, model=model)
    p = result.plan
    settings = dict(result.command.engine_args)
    settings["gpu_source"] = gpu_source
    settings["vllm_version_source"] = version_source or p.vllm_version_source
    terms = _compare(log, p, notes)
    failed = any(k in log for k in ("kv_needed_gib", "v0_max_tokens", "no_blocks", "free_check_failed"))
    failure_line = ""
    fixes: list[str] = []
    if failed:
        key = next(k for k in ("kv_needed_gib", "v0_max_tokens", "no_blocks", "free_check_failed") if k in log)
        failure_line = _strip_prefix(log["lines"][key])
        fixes = _fixes(log, p)
    return StartupLogExplanation(tuple(terms), p, settings, failed, failure_line, tuple(fixes), tuple(notes))


_PREFIX = re.compile(r"^.*?\] ")


def _strip_prefix(line: str) -> str:
    """vLLM's message without the logger's "(EngineCore pid=1) ERROR 01-01 00:00:00 [file.py:1] "."""
    m = _PREFIX.match(line)
    return V.clip(line[m.end():] if m else line, 2 * L.MAX_MESSAGE_CHARS)


def _rank_of(p: Any, weights_gib: float | None, peak_gib: float | None) -> Any:
    """The pipeline rank whose worker printed the per-GPU lines: the nearest weights, then peak
    (only the last rank runs the sampler). vLLM's lines do not name the rank."""
    def distance(r: Any) -> tuple[float, float]:
        w = 0.0 if weights_gib is None else round(abs(r.weights_bytes / GiB - weights_gib), 1)
        a = 0.0 if peak_gib is None else abs(r.activation_peak_bytes / GiB - peak_gib)
        return (w, a)
    return min(p.ranks, key=distance)


def _compare(log: dict[str, Any], p: Any, notes: list[str]) -> list[TermComparison]:
    weights_printed = log.get("weights_gib", log.get("profile_weights_gib"))
    rank = _rank_of(p, weights_printed, log.get("activation_gib"))
    if len(p.ranks) > 1:
        notes.append(f"per-GPU lines compared with pipeline rank {rank.pp_rank} (the rank whose planned weights "
                     "and peak are nearest the printed ones); token and block counts are engine-wide")
    kv = p.kv_cache
    lines = log["lines"]
    out: list[TermComparison] = []

    def add(term: str, key: str, planned: float | None, unit: str = "GiB") -> None:
        if key in log:
            out.append(TermComparison(term, float(log[key]), planned, unit, _strip_prefix(lines.get(key, ""))))

    add("requested", "requested_gib", p.requested_bytes / GiB)
    add("weights", "weights_gib", rank.weights_bytes / GiB)
    if "weights_gib" not in log:
        add("weights", "profile_weights_gib", rank.weights_bytes / GiB)
    add("activation_peak", "activation_gib", rank.activation_peak_bytes / GiB)
    add("non_torch", "non_torch_gib", rank.non_torch_bytes / GiB)
    add("non_kv_total", "non_kv_gib",
        (rank.weights_bytes + rank.activation_peak_bytes + rank.non_torch_bytes) / GiB)
    add("cudagraph_estimate", "cudagraph_estimate_gib", rank.cudagraph_bytes / GiB)
    add("available_kv", "available_kv_gib", rank.available_kv_cache_bytes / GiB)
    add("attention_block_size", "attention_block_size",
        None if kv is None else float(kv.attention_block_size), "tokens")
    add("mamba_padding", "mamba_padding_percent",
        None if kv is None else float(getattr(kv, "mamba_padding_percent", 0.0)), "%")
    add("num_gpu_blocks", "num_gpu_blocks", None if kv is None else float(kv.num_blocks), "blocks")
    add("kv_tokens", "kv_tokens", None if kv is None else float(kv.num_tokens), "tokens")
    add("max_concurrency", "max_concurrency", None if kv is None else float(kv.max_concurrency), "x")
    add("cudagraph_actual", "cudagraph_actual_gib", rank.cudagraph_bytes / GiB)
    if "kv_needed_gib" in log:
        need = rank.kv_bytes_per_request / GiB if rank.kv_bytes_per_request else None
        add("kv_needed_one_request", "kv_needed_gib", need)
        if "available_kv_gib" not in log:  # the refusal repeats the Available line's figure
            add("available_kv", "failed_available_gib", rank.available_kv_cache_bytes / GiB)
        add("estimated_max_model_len", "estimated_max_model_len", float(p.max_model_len_that_fits), "tokens")
    return out


def _fixes(log: dict[str, Any], p: Any) -> list[str]:
    """What makes the failed start-up start: vLLM's own figures first (they are measured), then
    the plan's levers that fit alone."""
    fixes: list[str] = []
    estimated = log.get("estimated_max_model_len")
    if estimated:
        fixes.append(f"--max-model-len {estimated}  (vLLM's own estimate from the memory it measured)")
    need, avail = log.get("kv_needed_gib"), log.get("failed_available_gib")
    total = p.total_memory_bytes / GiB
    util = p.settings["gpu_memory_utilization"]
    if need is not None and avail is not None and total > 0:
        raised = util + (need - avail) / total + 0.005
        if raised <= 1.0:
            fixes.append(f"--gpu-memory-utilization {raised:.3f}  (the printed shortfall, {need - avail:.2f} GiB, "
                         "added to the budget)")
    if not p.fits:
        for s in p.suggestions:
            if s.fits_after and not any(f.startswith(s.setting.split()[0] + " ") for f in fixes):
                fixes.append(f"{s.setting}  (plan: {s.reason}; frees {s.bytes_freed / GiB:.2f} GiB per GPU)")
    return fixes
