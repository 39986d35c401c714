"""The CLI's half of the bad-input catalogue (issue 10, issue 13 section 3): every bad command
line exits 2 with exactly one line on stderr, no traceback, the flag the user typed in the
message, and under ``--json`` that line is a JSON error object. Run in-process through
``cli.main`` (a subprocess per case would cost seconds); a few end-to-end cases spawn one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import vllm_mem
from vllm_mem import _limits as L
from vllm_mem import cli

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
HUGE = "9" * 5000
GOOD_STAGE = 'stages:\n  - stage_id: 0\n    devices: "0"\n    gpu_memory_utilization: 0.5\n'

PLAN = ["plan", LLAMA, "--gpu", "H100-80GB", "--max-model-len", "8192"]
KV = ["kv", LLAMA, "--available-gib", "20", "--max-model-len", "8192"]
STAGES = ["stages", "qwen3_omni_moe", "--gpu", "H100-80GB"]

#: (id, argv, the flag or field the one error line must name)
CLI_CASES: list[tuple[str, list[str], str]] = []
for _cmd, _base, _flags in (
        ("plan", PLAN, ("--max-model-len", "--tensor-parallel-size", "--pipeline-parallel-size", "--max-num-seqs",
                        "--max-num-batched-tokens", "--block-size", "--gpu-count")),
        ("kv", KV, ("--max-model-len", "--tensor-parallel-size", "--pipeline-parallel-size", "--block-size",
                    "--max-num-batched-tokens", "--num-gpu-blocks-override"))):
    for _flag in _flags:
        # --max-model-len -1 is vLLM's auto (from 0.14): its negative case is -2.
        _negative = "-2" if _flag == "--max-model-len" else "-1"
        for _tag, _value in (("text", "abc"), ("zero", "0"), ("negative", _negative), ("float", "1.5"),
                             ("2**63", str(2**63)), ("huge", HUGE), ("over_bound", str(L.MAX_MODEL_LEN_TOKENS + 1)),
                             ("empty", "")):
            CLI_CASES.append((f"{_cmd}{_flag}-{_tag}", [*_base, _flag, _value], _flag))
for _tag, _value in (("nan", "nan"), ("inf", "inf"), ("zero", "0"), ("above_one", "1.5"), ("text", "most")):
    CLI_CASES.append((f"plan--gpu-memory-utilization-{_tag}", [*PLAN, "--gpu-memory-utilization", _value],
                      "--gpu-memory-utilization"))
for _cmd, _base, _flag in (("plan", PLAN[:2], "--total-memory-gib"), ("plan", PLAN, "--free-memory-gib"),
                           ("kv", KV[:2] + KV[4:], "--available-gib"), ("stages", STAGES, "--reserve-gib"),
                           ("stages", STAGES, "--free-memory-gib")):
    for _tag, _value in (("nan", "nan"), ("inf", "inf"), ("huge", "1e400"), ("overflowing_bytes", "1e300"),
                         ("text", "lots"), ("negative", "-1"), ("above_1_pib", str(2**21))):
        CLI_CASES.append((f"{_cmd}{_flag}-{_tag}", [*_base, _flag, _value], _flag))
for _cmd, _base in (("plan", PLAN[:2]), ("stages", STAGES[:2])):
    for _tag, _value in (("bare_number", "80"), ("unknown", "H100-90GB"), ("huge_name", "x" * 3000),
                         ("zero_size", "0GiB"), ("inf_size", "1e400GiB"), ("empty", "")):
        CLI_CASES.append((f"{_cmd}--gpu-{_tag}", [*_base, "--gpu", _value], "--gpu"))
CLI_CASES += [
    ("plan-no-gpu", ["plan", LLAMA], "--gpu"),
    ("plan-tp-not-dividing-heads", [*PLAN, "-tp", "3"], "--tensor-parallel-size"),
    ("plan-tp-beyond-gpu-count", [*PLAN, "-tp", "4", "--gpu-count", "2"], "--tensor-parallel-size"),
    ("plan-unknown-dtype", [*PLAN, "--dtype", "int3"], "--dtype"),
    ("plan-unknown-kv-dtype", [*PLAN, "--kv-cache-dtype", "fp7"], "--kv-cache-dtype"),
    ("plan-kv-cache-memory-bytes-text", [*PLAN, "--kv-cache-memory-bytes", "1GiB"], "--kv-cache-memory-bytes"),
    ("plan-missing-config", ["plan", "/no/such/config.json", "--gpu", "L4"], "CONFIG"),
    ("plan-config-name-too-long", ["plan", "x" * 5000, "--gpu", "L4"], "CONFIG"),
    ("plan-unknown-flag", [*PLAN, "--max-model-length", "8"], "--max-model-length"),
    ("plan-missing-value", [*PLAN, "--max-model-len"], "--max-model-len"),
    ("kv-missing-available", ["kv", LLAMA], "--available-gib"),
    ("kv-too-many-available", ["kv", LLAMA, "--available-gib", *(["1"] * 3)], "--available-gib"),
    ("stages-missing-file", ["stages", "/no/such.yaml", "--gpu", "H100-80GB"], "FILE.yaml"),
    ("stages-no-file", ["stages", "--gpu", "H100-80GB"], "FILE.yaml"),
    ("stages-empty-visible-entry", [*STAGES, "--cuda-visible-devices", "0,,1"], "--cuda-visible-devices"),
    ("stages-reserve-beyond-gpu", [*STAGES, "--reserve-gib", "100"], "--reserve-gib"),
    ("stages-free-beyond-gpu", [*STAGES, "--free-memory-gib", "100"], "--free-memory-gib"),
    ("stages-reserve-live", ["stages", "qwen3_omni_moe", "--reserve-gib", "1"], "--reserve-gib"),
    ("snapshot-device-negative", ["snapshot", "--device", "-1"], "--device"),
    ("snapshot-device-huge", ["snapshot", "--device", HUGE], "--device"),
    ("unknown-command", ["sizes"], "COMMAND"),
    ("no-command", [], "COMMAND"),
    ("completion-unknown-shell", ["completion", "fish"], "shell"),
]


def _main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv, flag", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_cli_refuses(capsys: pytest.CaptureFixture[str], argv: list[str], flag: str, as_json: bool) -> None:
    code, out, err = _main([*argv, "--json"] if as_json else argv, capsys)
    assert code == cli.EXIT_BAD_INPUT, (out, err)
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and out == ""
    assert "9" * 100 not in lines[0] and "x" * 100 not in lines[0]
    if as_json:
        error = json.loads(lines[0])["error"]
        assert error["exit_code"] == 2 and flag in error["message"]
        assert len(error["message"]) <= L.MAX_MESSAGE_CHARS
        assert set(error) == {"command", "exit_code", "type", "field", "message"}
    else:
        assert len(lines[0]) <= L.MAX_MESSAGE_CHARS + 40  # with the "vllm-mem plan: error: " prefix
        assert lines[0].startswith("vllm-mem") and ": error: " in lines[0]
        assert flag in lines[0]


def test_cli_names_the_flag_not_the_api_keyword(capsys: pytest.CaptureFixture[str]) -> None:
    _code, _out, err = _main(["plan", LLAMA, "--total-memory-gib", "0"], capsys)
    assert "--total-memory-gib" in err and "total_memory_bytes" not in err


def test_bad_stage_files_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = {
        "bomb.yaml": "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)),
        "dup.yaml": GOOD_STAGE + "    gpu_memory_utilization: 0.9\n",
        "bad.yaml": "stages: [\n",
        "nan.yaml": GOOD_STAGE.replace("0.5", ".nan"),
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        code, _out, err = _main(["stages", str(tmp_path / name), "--gpu", "H100-80GB"], capsys)
        assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, (name, err)
    (tmp_path / "latin1.yaml").write_bytes(b"stages: []  # caf\xe9\n")
    code, _out, err = _main(["stages", str(tmp_path / "latin1.yaml"), "--gpu", "H100-80GB"], capsys)
    assert code == 2 and "UTF-8" in err


def test_keyboard_interrupt_is_quiet_130(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from vllm_mem.cli import gpus

    def interrupted(args: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(gpus, "run", interrupted)
    code, out, err = _main(["gpus"], capsys)
    assert code == cli.EXIT_INTERRUPTED and err == "" and out == ""


@pytest.mark.parametrize("exc", [OverflowError("int too large to convert"),
                                 UnicodeDecodeError("utf-8", b"\xe9", 0, 1, "invalid"),
                                 PermissionError(13, "Permission denied", "/x"),
                                 vllm_mem.InvalidArgumentTypeError("block_size: must be an integer", "block_size")])
def test_input_errors_are_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                      exc: BaseException) -> None:
    from vllm_mem.cli import gpus

    def failing(args: Any) -> int:
        raise exc

    monkeypatch.setattr(gpus, "run", failing)
    for argv in (["gpus"], ["gpus", "--json"]):
        code, _out, err = _main(argv, capsys)
        assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
        if "--json" in argv:
            assert json.loads(err)["error"]["type"] == type(exc).__name__


@pytest.mark.parametrize("exc", [RecursionError(), MemoryError(), TypeError("unsupported operand"),
                                 AttributeError("'NoneType' object has no attribute 'x'")])
def test_bugs_keep_their_traceback(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    # A plain TypeError, RecursionError or MemoryError is our bug, not the user's input: exiting
    # 2 ("bad input") with one line would hide it. Input checks raise the typed errors instead.
    from vllm_mem.cli import gpus

    def failing(args: Any) -> int:
        raise exc

    monkeypatch.setattr(gpus, "run", failing)
    with pytest.raises(type(exc)):
        cli.main(["gpus"])


def test_typed_error_field_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    # The field travels on the exception (no parsing of the message): an API keyword becomes the
    # flag, a nested field keeps its tail, and --json reports the flag as "field".
    from vllm_mem.cli import _flag_message

    fields = {"max_model_len": "--max-model-len", "speculative_config": "--speculative-config"}
    assert _flag_message("max_model_len: must be at least 1; got 0", fields, "max_model_len") == (
        "--max-model-len: must be at least 1; got 0", "--max-model-len")
    assert _flag_message("speculative_config.method: unknown", fields, "speculative_config.method") == (
        "--speculative-config.method: unknown", "--speculative-config.method")
    # A field with no flag keeps its own name.
    assert _flag_message("config.json: bad", fields, "config.json") == ("config.json: bad", "config.json")
    code, _out, err = _main(["plan", LLAMA, "--gpu", "H100-80GB", "--gpu-memory-utilization", "1.5", "--json"],
                            capsys)
    assert code == 2 and json.loads(err)["error"]["field"] == "--gpu-memory-utilization"


def test_broken_pipe_exits_141_quietly(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from vllm_mem.cli import gpus

    def reader_gone(args: Any) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(gpus, "run", reader_gone)
    code, out, err = _main(["gpus"], capsys)
    assert code == cli.EXIT_BROKEN_PIPE and err == "" and out == ""


def _spawn(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run([sys.executable, "-m", "vllm_mem", *args], capture_output=True, text=True, env=env,
                          timeout=120, **kwargs)


def test_closed_pipe_is_quiet() -> None:
    # `vllm-mem models | head -1`: the reader leaves; no BrokenPipeError traceback.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    r = subprocess.run(f"'{sys.executable}' -m vllm_mem gpus --json | head -c 10", shell=True,
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr


def test_end_to_end_error_is_one_json_line_on_stderr() -> None:
    r = _spawn("plan", LLAMA, "--gpu", "H100-80GB", "--max-model-len", "-5", "--json")
    assert r.returncode == 2 and r.stdout == ""
    assert json.loads(r.stderr)["error"]["field"] == "--max-model-len"


def test_version_models_and_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"vllm-mem {vllm_mem.__version__}"
    code, out, _err = _main(["models", "--json"], capsys)
    assert code == 0 and {m["name"] for m in json.loads(out)} == set(vllm_mem.bundled_model_configs())
    code, out, _err = _main(["stages", "--list-examples", "--json"], capsys)
    names = {n for e in json.loads(out) for n in [e["name"], *e["aliases"]]}
    assert code == 0 and "qwen3_omni_moe.yaml" in names and "qwen3_omni_moe.stage_args" in names


def test_readme_example_by_name_works() -> None:
    # README: vllm_mem.check_stages("qwen3_omni_moe.yaml", gpus="H100-80GB")
    report = vllm_mem.check_stages("qwen3_omni_moe.yaml", gpus="H100-80GB")
    assert report.ok and report.format == "stages"


def test_gpu_takes_a_name_or_a_size_in_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    by_name = _main([*PLAN, "--json"], capsys)
    total = vllm_mem.lookup_gpu("H100-80GB").total_memory_bytes
    by_size = _main(["plan", LLAMA, "--gpu", f"{total}B", "--max-model-len", "8192", "--json"], capsys)
    assert by_name[0] == by_size[0] == 0
    assert json.loads(by_name[1])["kv_cache"]["num_blocks"] == json.loads(by_size[1])["kv_cache"]["num_blocks"]
    stages_by_name = _main([*STAGES, "--json"], capsys)
    stages_by_size = _main(["stages", "qwen3_omni_moe", "--gpu", f"{total}B", "--json"], capsys)
    assert stages_by_name[0] == stages_by_size[0] == 0
    assert [d["total_bytes"] for d in json.loads(stages_by_name[1])["devices"]] == \
        [d["total_bytes"] for d in json.loads(stages_by_size[1])["devices"]]


def test_kv_says_when_it_defaulted_max_model_len(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = _main(["kv", LLAMA, "--available-gib", "40"], capsys)
    limit = vllm_mem.ModelSpec.from_hf_config(LLAMA).max_position_embeddings
    assert code == 0 and f"using the model's limit {limit:,}" in out
    code, out, _err = _main(["kv", LLAMA, "--available-gib", "40", "--json"], capsys)
    data = json.loads(out)
    assert data["max_model_len_defaulted"] is True and data["max_model_len"] == limit
    code, out, _err = _main([*KV, "--json"], capsys)
    assert json.loads(out)["max_model_len_defaulted"] is False


def test_completion_script_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = _main(["completion", "bash"], capsys)
    assert code == 0 and "complete -F _vllm_mem vllm-mem" in out
    for command in ("kv", "plan", "gpus", "models", "stages", "snapshot"):
        assert command in out
    assert "--list-examples" in out and "--max-model-len" in out


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_completion_script_completes_in_bash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["completion", "bash"]) == 0
    script = tmp_path / "vllm-mem.bash"
    script.write_text(capsys.readouterr().out)
    probe = (f"source '{script}'; COMP_WORDS=(vllm-mem plan --max-m); COMP_CWORD=2; _vllm_mem; "
             'echo "${COMPREPLY[@]}"; COMP_WORDS=(vllm-mem sta); COMP_CWORD=1; _vllm_mem; echo "${COMPREPLY[@]}"')
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=60).stdout.splitlines()
    assert out == ["--max-model-len", "stages"]


def test_cli_catalogue_size() -> None:
    assert 2 * len(CLI_CASES) >= 150
