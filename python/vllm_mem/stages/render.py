"""How a stage check is shown, side by side: the text report (:func:`stage_check_text`, what
``str(check)`` prints), plain data (:meth:`~vllm_mem.stages.StageCheck.to_dict`) and the
notebook HTML (:func:`stage_check_html`, in :mod:`vllm_mem.display.stages`), all from the
check's rows. vLLM's own messages (a start-up failure's "Free memory on device ...") come from
the core as they are and are only placed here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import format_gib_text

if TYPE_CHECKING:
    from .check import StageCheck


def _gib(num_bytes: int) -> str:
    return f"{format_gib_text(num_bytes)} GiB"


def _devices(check: StageCheck) -> str:
    out = ""
    for d in check.devices:
        out += (
            f"\nGPU {d.physical_id}{f' ({d.name})' if d.name else ''}: total {_gib(d.total_bytes)}, free "
            f"{_gib(d.free_bytes)} ({d.free_source})\n"
            f"  utilization {d.utilization_expression}{'  <<< OVER 1.0' if d.over_committed else ''}\n"
            f"  requested {_gib(d.requested_bytes)}, headroom {d.headroom} ({_gib(d.headroom_bytes)})\n"
        )
        out += "".join(
            f"    stage {s['stage_id']}  {s['local_device']}  {s['utilization']}  {_gib(s['requested_bytes'])}\n"
            for s in d.stages
        )
    return out


def _startup(check: StageCheck) -> str:
    return "\nStart-up, in start order (vLLM: free >= ceil(total * utilization)):\n" + "".join(
        f"  stage {p.stage_id} on GPU {p.physical_id} ({p.device}): free {_gib(p.free_bytes)}"
        f"{' < ' if p.fails else ' >= '}requested {_gib(p.requested_bytes)}{'  FAILS' if p.fails else '  ok'}\n"
        for p in check.startup
    )


def _listed(title: str, lines: list[str]) -> str:
    return f"\n{title}:\n" + "".join(f"  - {line}\n" for line in lines) if lines else ""


def stage_check_text(check: StageCheck, num_stages: int, num_gpu_stages: int) -> str:
    """The readable report: each GPU's stages and utilization sum, vLLM's start-up check in start
    order, then the stage plans, problems, fixes, out-of-memory advice and notes."""
    head = (
        f"vLLM-Omni stages: {num_stages} stage(s), {num_gpu_stages} on {len(check.devices)} GPU(s) "
        f"({check.format}: format): {'OK' if check.ok else 'DOES NOT FIT'}\n"
    )
    return (
        head
        + _devices(check)
        + _startup(check)
        + _listed("Stage plans (start-up planner, on each stage's smallest GPU)", [p["line"] for p in check.plans])
        + _listed("Problems", check.problems)
        + _listed("Suggestions", check.suggestions)
        + _listed("If a stage runs out of memory during inference", [] if check.ok else check.oom_advice)
        + _listed("Notes", check.notes)
    )


def stage_check_html(check: StageCheck) -> str:
    """The notebook block (``check._repr_html_()``): :func:`vllm_mem.display.stage_check_html`."""
    from ..display.stages import stage_check_html as html  # imported on first display only

    return html(check)
