"""The evaluated start-up plan: its figures, verdict and levers (see :func:`vllm_mem.plan`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import _C
from ..kv_cache import KvCacheCapacity
from ..model_spec import ModelSpec
from ..units import GiB_bytes as GiB
from .render import plan_html, plan_text, plan_to_dict

#: Where a plan can fail, in vLLM's start-up order.
FAILURE_PHASES = ("free_memory", "weights", "profile_peak", "no_kv_blocks", "max_model_len")


@dataclass(frozen=True)
class PlanSuggestion:
    """One lever: the setting to use, in one direction, with the bytes it frees.

    Attributes
    ----------
    lever : str
        The plan keyword (``"gpu_memory_utilization"``, ``"max_model_len"``, ...).
    direction : str
        ``"increase"``, ``"decrease"`` or ``"set"``.
    value : str
        The new value.
    setting : str
        The vLLM command-line flag, e.g. ``"--max-model-len 54272"``.
    bytes_freed : int
        How much the failing phase's shortfall shrinks, per GPU.
    fits_after : bool
        Whether this change alone makes the plan fit.
    reason : str
        One line of explanation.
    """

    lever: str
    direction: str
    value: str
    setting: str
    bytes_freed: int
    fits_after: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"lever": self.lever, "direction": self.direction, "value": self.value,
                "setting": self.setting, "bytes_freed": self.bytes_freed,
                "gib_freed": round(self.bytes_freed / GiB, 4), "fits_after": self.fits_after,
                "reason": self.reason}


@dataclass(frozen=True)
class RankPlan:
    """One pipeline rank's figures (every tensor-parallel GPU of the rank alike), bytes."""

    pp_rank: int
    first_layer: int
    end_layer: int
    weights_bytes: int
    activation_peak_bytes: int
    non_torch_bytes: int
    cudagraph_bytes: int
    available_kv_cache_bytes: int
    kv_bytes_per_block: int
    kv_bytes_per_request: int
    num_blocks: int
    #: speculative decoding: the drafter's part of weights_bytes and of the KV pool
    draft_weights_bytes: int = 0
    draft_kv_bytes_per_block: int = 0
    draft_kv_cache_bytes: int = 0
    #: a multimodal model's vision tower and projector: part of weights_bytes
    vision_encoder_bytes: int = 0
    #: --enable-lora: the adapter slots and the Punica wrapper's tensors, part of weights_bytes
    lora_slots_bytes: int = 0


class StartupPlan:
    """The evaluated plan (see :func:`plan`). ``str(plan)`` is the report."""

    # Every figure is read from the core's plan on access: building one costs three stores.
    __slots__ = ("_p", "_spec", "_suggestions")

    def __init__(self, native: Any, spec: ModelSpec) -> None:
        self._p = native
        self._spec = spec
        self._suggestions: list[PlanSuggestion] | None = None

    # --- the breakdown (the tightest GPU), bytes ---------------------------------------------
    @property
    def total_memory_bytes(self) -> int:
        return int(self._p.inputs.total_memory_bytes)

    @property
    def free_memory_bytes(self) -> int:
        """Free memory at start-up: given, or total minus the idle baseline (see report)."""
        return int(self._p.inputs.free_memory_bytes)

    @property
    def requested_bytes(self) -> int:
        """``ceil(total * gpu_memory_utilization)``, vLLM's budget."""
        return int(self._p.requested_bytes)

    @property
    def weights_bytes(self) -> int:
        return int(self._p.weights_bytes)

    @property
    def draft_weights_bytes(self) -> int:
        """The speculative drafter's weights on the tightest GPU (part of ``weights_bytes``)."""
        return int(self._p.ranks[self._p.tightest_pp_rank].draft_weights_bytes)

    @property
    def vision_encoder_bytes(self) -> int:
        """A multimodal model's vision tower and projector on the tightest GPU (part of
        ``weights_bytes``; 0 for a text model)."""
        return int(self._p.ranks[self._p.tightest_pp_rank].vision_encoder_bytes)

    @property
    def lora_slots_bytes(self) -> int:
        """--enable-lora: vLLM's LoRA adapter slots (max_loras x every wrapped layer at
        max_lora_rank) and the Punica wrapper's tensors on the tightest GPU, part of
        ``weights_bytes`` ("Model loading took"); 0 without LoRA."""
        return int(self._p.ranks[self._p.tightest_pp_rank].lora_slots_bytes)

    @property
    def multimodal_profile(self) -> dict[str, Any] | None:
        """vLLM's multimodal profile run on the tightest GPU (part of ``activation_peak_bytes``):
        the encoder budget and dummy images it prints ("Encoder cache will be initialized with a
        budget of N tokens, and profiled with M image items"), the modality profiled ("image",
        "video", "audio": the one with the most tokens per item among those ``limit_mm_per_prompt``
        leaves on) and the dummy video's frames, the pixels and cached embeddings alive beside the text
        phases, the encoder phase, and the ``mm_processor_kwargs`` keys that change no size. None
        for a text model or a vision tower whose processor has no rule (the plan's caveat says so);
        ``runs`` is 0 when the limits, ``skip_mm_profiling`` or ``language_model_only`` turn the run
        off."""
        m = self._p.ranks[self._p.tightest_pp_rank].activation.multimodal
        if not m.modelled:
            return None
        return {"runs": int(m.runs), "encoder_budget_tokens": m.budget.encoder_budget_tokens, "items": m.items,
                "modality": m.modality, "video_frames": m.video_frames,
                "no_effect_kwargs": list(m.no_effect_kwargs),
                "pixel_bytes": m.pixel_bytes, "encoder_output_bytes": m.encoder_output_bytes,
                "attention_mask_bytes": m.attention_mask_bytes, "encoder_layer_bytes": m.encoder_layer_bytes,
                "encoder_phase_bytes": m.encoder_phase_bytes, "resident_bytes": m.resident_bytes}

    @property
    def draft_kv_cache_bytes(self) -> int:
        """The drafter's attention layers' share of the KV pool on the tightest GPU."""
        return int(self._p.ranks[self._p.tightest_pp_rank].draft_kv_cache_bytes)

    @property
    def activation_peak_bytes(self) -> int:
        """vLLM's "torch peak memory increase" of the profile run (estimated)."""
        return int(self._p.activation_peak_bytes)

    @property
    def non_torch_bytes(self) -> int:
        """vLLM's "non-torch forward increase memory" (estimated)."""
        return int(self._p.non_torch_bytes)

    @property
    def cudagraph_bytes(self) -> int:
        """The CUDA-graph pool estimate (0 with ``enforce_eager``)."""
        return int(self._p.cudagraph_bytes)

    @property
    def available_kv_cache_bytes(self) -> int:
        """vLLM's "Available KV cache memory" on the tightest GPU (negative when short)."""
        return int(self._p.available_kv_cache_bytes)

    @property
    def kv_cache(self) -> KvCacheCapacity | None:
        """Blocks, tokens and concurrency when the plan fits, else ``None``."""
        kv = self._p.kv_cache
        return None if kv is None else KvCacheCapacity._from_native(kv)

    @property
    def max_model_len(self) -> int:
        """The length planned: the one asked, the model's derived maximum, or (``"auto"``) the
        one vLLM's auto-fit settled on."""
        return int(self._p.inputs.max_model_len)

    @property
    def auto_fit_line(self) -> str:
        """vLLM's "Auto-fit max_model_len: ..." line of a ``max_model_len="auto"`` plan ("" else)."""
        return str(self._p.auto_fit_line)

    @property
    def max_model_len_that_fits(self) -> int:
        """The largest ``max_model_len`` one request fits in (0: none), up to the model's limit."""
        return int(self._p.max_model_len_that_fits)

    @property
    def ranks(self) -> list[RankPlan]:
        return [RankPlan(r.pp_rank, r.first_layer, r.end_layer, r.weights_bytes,
                         r.activation_peak_bytes, r.non_torch_bytes, r.cudagraph_bytes,
                         r.available_kv_cache_bytes, r.kv_bytes_per_block, r.kv_bytes_per_request,
                         r.num_blocks, r.draft_weights_bytes, r.draft_kv_bytes_per_block,
                         r.draft_kv_cache_bytes, r.vision_encoder_bytes, r.lora_slots_bytes)
                for r in self._p.ranks]

    @property
    def tightest_pp_rank(self) -> int:
        return int(self._p.tightest_pp_rank)

    @property
    def request(self) -> _C.PlanRequest:
        """What was asked, as given: the settings before the release's defaults and the
        environment filled them in (those are :attr:`settings` and :attr:`vllm_version`). A
        copy, so ``plan(spec, gpu, request=p.request.replace(...))`` asks again with one change."""
        return _C.PlanRequest.__copy__(self._p.request)

    # --- which vLLM ---------------------------------------------------------------------------
    @property
    def vllm_version(self) -> str:
        """The release whose rules planned this (``"0.19.0"``: the newest profile <= the asked or
        installed version)."""
        return str(self._p.inputs.resolved_vllm_version)

    @property
    def vllm_version_source(self) -> str:
        """Why that release: ``"asked"``, ``"installed"`` or ``"newest known"``."""
        return str(self._p.inputs.vllm_version_source) or "newest known"

    @property
    def vllm_version_note(self) -> str:
        source = str(self._p.inputs.vllm_version_source)
        if source.startswith("newest known: "):  # an installed vLLM no profile resolves: say so, not "none installed"
            return source.removeprefix("newest known: ")
        return str(self._p.inputs.vllm_version_note)

    @property
    def settings(self) -> dict[str, Any]:
        """The settings vLLM would run with once the release's defaults are filled in."""
        i = self._p.inputs
        return {"gpu_memory_utilization": i.gpu_memory_utilization, "max_model_len": i.max_model_len,
                "max_num_seqs": i.max_num_seqs, "max_num_batched_tokens": i.max_num_batched_tokens,
                "dtype": i.dtype, "cudagraph_memory_in_budget": bool(i.cudagraph_memory_in_budget),
                "vllm_engine": i.vllm_engine, "usage_context": i.usage_context,
                "hybrid_kv_cache_manager": bool(i.hybrid_kv_cache_manager)}

    @property
    def dtype_note(self) -> str:
        """Set when ``dtype="auto"`` serves the checkpoint in another dtype (bfloat16 as float16 on
        GPUs below compute capability 8.0)."""
        return str(self._p.inputs.dtype_note)

    @property
    def available_kv_line(self) -> str:
        """vLLM's "Available KV cache memory" line as the planned release rounds it."""
        return str(self._p.available_kv_line)

    @property
    def kv_log_lines(self) -> list[str]:
        """vLLM's KV capacity lines as the planned release words and rounds them (empty when the
        plan does not fit)."""
        return list(self._p.kv_log_lines)

    # --- the verdict --------------------------------------------------------------------------
    @property
    def fits(self) -> bool:
        return bool(self._p.fits)

    @property
    def failure_phase(self) -> str | None:
        """``None`` when the plan fits, else one of :data:`FAILURE_PHASES`."""
        return self._p.failure_phase or None

    @property
    def failure_message(self) -> str:
        """vLLM's own message for the failure where it has one."""
        return str(self._p.failure_message)

    @property
    def shortfall_bytes(self) -> int:
        return int(self._p.shortfall_bytes)

    @property
    def suggestions(self) -> list[PlanSuggestion]:
        """Ranked levers (empty when the plan fits)."""
        if self._suggestions is None:
            self._suggestions = [
                PlanSuggestion(s.lever, s.direction, s.value, s.setting, int(s.bytes_freed),
                               bool(s.fits_after), s.reason)
                for s in _C.suggest_plan_changes(self._spec._spec, self._p)
            ]
        return list(self._suggestions)

    @property
    def kv_cache_memory_bytes_suggestion(self) -> int | None:
        """The ``--kv-cache-memory-bytes`` value vLLM would suggest "to fit into requested
        memory" (150 MiB buffer), from the estimates; ``None`` when that value would not start
        (it holds no ``max_model_len`` request, or the plan fails before the KV cache)."""
        if not self._p.kv_cache_memory_suggestion_fits:
            return None
        return int(self._p.kv_cache_memory_suggestion.to_requested_limit_bytes)

    @property
    def kv_cache_memory_suggestion_line(self) -> str:
        """vLLM's suggestion line as it would print with these estimates."""
        return str(self._p.kv_cache_memory_suggestion.line)

    # --- presentation -------------------------------------------------------------------------
    def report(self) -> str:
        """The text report a person reads at a glance."""
        return plan_text(self)

    def __str__(self) -> str:
        return self.report()

    def __repr__(self) -> str:
        verdict = "fits" if self.fits else f"does not fit ({self.failure_phase})"
        return (f"<StartupPlan {self._spec.name or self._spec.model_type}: {verdict}, "
                f"KV {self.available_kv_cache_bytes / GiB:.2f} GiB of "
                f"{self.total_memory_bytes / GiB:.2f} GiB>")

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain JSON-able values; every byte figure also in GiB and as a
        fraction of the device."""
        return plan_to_dict(self)

    def _repr_html_(self) -> str:
        return plan_html(self)

    def plot(self, ax: Any = None) -> Any:
        """The breakdown as a stacked bar (needs matplotlib, the ``plot`` extra); returns
        ``(figure, axes)``. See :func:`vllm_mem.display.plot_plan`."""
        from ..display import plot_plan

        return plot_plan(self, ax)
