"""The pytest plugin's GPU-memory markers, summary and fixture, run with pytester on the simulated
device; one GPU test with real torch tensors where a GPU exists.

The inner runs load the plugin the way this run has it: through the installed ``pytest11`` entry
point, or with ``-p vllm_mem.pytest_plugin`` where only PYTHONPATH provides the package.
"""

from __future__ import annotations

import importlib.metadata
import json
import os

import pytest
import vllm_mem.testing  # noqa: F401  (the extension stays imported across in-process runs)
from vllm_mem.pytest_plugin import GpuMemoryUsage, gpu_visible, parse_size

pytest_plugins = ["pytester"]

GiB = 1 << 30
MiB = 1 << 20


def _plugin_args() -> list[str]:
    """[] when pytest autoloads the plugin from its entry point, else -p to load it by module."""
    if not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        for ep in importlib.metadata.entry_points(group="pytest11"):
            if ep.name == "vllm_mem" and ep.value == "vllm_mem.pytest_plugin":
                return []
    # In-process runs find the module imported already (this file imports it): not rewritten.
    return ["-p", "vllm_mem.pytest_plugin", "-W", "ignore::pytest.PytestAssertRewriteWarning"]


def _subprocess_pythonpath(monkeypatch: pytest.MonkeyPatch) -> None:
    """Subprocess runs start in pytester's folder: make PYTHONPATH find this vllm_mem from there
    (a relative PYTHONPATH such as build/dev-NAME/site would not)."""
    import vllm_mem

    here = os.path.abspath(os.path.dirname(os.path.dirname(vllm_mem.__file__)))  # no symlinks resolved
    rest = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (here, rest) if p))


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester folder with the project's strictness: unknown markers and warnings are errors."""
    pytester.makeini("""
        [pytest]
        addopts = --strict-markers -p no:cacheprovider
        filterwarnings = error
    """)
    return pytester


# Other plugins of this environment that inner runs do not need: hypothesis's takes most of an
# inner run's start-up, and pytest-benchmark warns (an error here) under xdist, also when this
# run is itself an xdist worker. Blocking a plugin that is not installed is harmless.
_QUIET = ["-p", "no:hypothesispytest", "-p", "no:benchmark"]


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*_plugin_args(), *_QUIET, "-rA", *args)


# ---------------------------------------------------------------------------------------------
# limit_gpu_memory
# ---------------------------------------------------------------------------------------------

_SPIKE = """
import pytest
GiB, MiB = 1 << 30, 1 << 20

def spike(sim):
    # 1.5 GiB of tensors, freed: the segment stays reserved until empty_cache; meanwhile a
    # 768 MiB workspace outside torch comes and goes (the sampler sees it, the allocator not).
    sim.torch_alloc(3 * GiB // 2)
    sim.torch_free(3 * GiB // 2)
    sim.transient_non_torch(768 * MiB)

@pytest.mark.limit_gpu_memory({limit!r})
def test_spike(simulated_device):
    spike(simulated_device)
"""


def test_over_the_limit_fails_with_the_split(inner: pytest.Pytester) -> None:
    inner.makepyfile(_SPIKE.format(limit="2 GiB"))
    result = _run(inner)
    result.assert_outcomes(failed=1)
    peak = 3 * GiB // 2 + 768 * MiB
    result.stdout.fnmatch_lines([
        f"*GPU memory limit exceeded on cuda:0 (simulated): peak 2.25 GiB ({peak} bytes) > "
        f"limit 2.0 GiB ({2 * GiB} bytes) ?@pytest.mark.limit_gpu_memory('2 GiB')?",
        "*torch allocated *+1.5 GiB*peak of tensors*",
        "*torch reserved *+1.5 GiB*peak of the caching allocator*",
        "*non-torch *+768.0 MiB*peak outside torch*+0.0 MiB at the end*",
        "*sampler's transient peak the allocator missed: 768.0 MiB of non-torch memory*",
    ])
    # The torch figures alone (1.5 GiB) are under the limit: it is the transient that fails it.
    assert "torch allocator figures unavailable" not in result.stdout.str()


@pytest.mark.parametrize("limit", ["2.25 GiB", "3GiB", 3 * GiB])
def test_at_or_under_the_limit_passes(inner: pytest.Pytester, limit: object) -> None:
    inner.makepyfile(_SPIKE.format(limit=limit))
    _run(inner).assert_outcomes(passed=1)


def test_the_limit_is_checked_after_the_test_only_when_it_passed(inner: pytest.Pytester) -> None:
    inner.makepyfile("""
        import pytest

        @pytest.mark.limit_gpu_memory("1 MiB")
        def test_own_failure(simulated_device):
            simulated_device.torch_alloc(1 << 30)
            assert False, "the test's own failure"
    """)
    result = _run(inner)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the test's own failure*"])
    assert "GPU memory limit exceeded" not in result.stdout.str()


def test_limit_marker_on_a_class_applies_to_its_tests(inner: pytest.Pytester) -> None:
    inner.makepyfile("""
        import pytest

        @pytest.mark.limit_gpu_memory("100 MiB")
        class TestSmall:
            def test_small(self, simulated_device):
                simulated_device.transient_torch(50 << 20)

            @pytest.mark.limit_gpu_memory("1 GiB")      # the closest marker wins
            def test_large_allowed(self, simulated_device):
                simulated_device.transient_torch(500 << 20)

            def test_large(self, simulated_device):
                simulated_device.transient_torch(500 << 20)
    """)
    result = _run(inner)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED *TestSmall::test_large*"])


def test_device_argument_measures_that_device(inner: pytest.Pytester) -> None:
    inner.makepyfile("""
        import pytest
        from vllm_mem.testing import SimulatedDevice
        GiB = 1 << 30

        @pytest.fixture
        def two_gpus():
            with SimulatedDevice(num_devices=2) as sim:
                yield sim

        @pytest.mark.limit_gpu_memory("1 GiB", device=1)
        def test_on_one(two_gpus):
            two_gpus.transient_torch(2 * GiB, device=1)

        @pytest.mark.limit_gpu_memory("1 GiB", device="cuda:1")
        def test_other_device_not_counted(two_gpus):
            two_gpus.transient_torch(2 * GiB, device=0)

        @pytest.mark.limit_gpu_memory("1 GiB", device=0)
        @pytest.mark.limit_gpu_leaks("1 MiB", device=1)
        def test_conflict(two_gpus):
            pass
    """)
    result = _run(inner)
    result.assert_outcomes(passed=1, failed=1, errors=1)
    result.stdout.fnmatch_lines(["*GPU memory limit exceeded on cuda:1 (simulated): peak 2.0 GiB*"])
    result.stdout.fnmatch_lines(["*test_conflict: limit_gpu_memory and limit_gpu_leaks name "
                                 "different devices (0, 1)*"])


def test_without_torch_figures_everything_is_non_torch(inner: pytest.Pytester) -> None:
    inner.makepyfile("""
        import pytest
        from vllm_mem.testing import SimulatedDevice

        @pytest.fixture
        def no_torch():
            # torch's allocator not initialised: its figures are 0 and flagged
            with SimulatedDevice(torch_initialized=False) as sim:
                yield sim

        @pytest.mark.limit_gpu_memory("1 GiB")
        def test_no_torch(no_torch):
            no_torch.non_torch_alloc(2 << 30)
    """)
    result = _run(inner)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*GPU memory limit exceeded*peak 2.0 GiB*",
        "*torch allocated *+0.0 MiB*", "*non-torch *+2.0 GiB*",
        "*torch allocator figures unavailable (not_initialized): all memory counts as non-torch",
    ])


def test_a_device_failure_during_the_test_fails_it_with_the_reason(inner: pytest.Pytester) -> None:
    inner.makepyfile("""
        import pytest

        @pytest.mark.limit_gpu_memory("1 GiB")
        def test_driver_lost(simulated_device):
            simulated_device.fail("driver gone (simulated)")   # every later read raises
    """)
    result = _run(inner)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*RuntimeError: *driver gone (simulated)*"])


# ---------------------------------------------------------------------------------------------
# limit_gpu_leaks
# ---------------------------------------------------------------------------------------------


def test_leaks_fail_torch_and_non_torch_separately(inner: pytest.Pytester) -> None:
    inner.makepyfile("""
        import pytest
        MiB = 1 << 20

        @pytest.mark.limit_gpu_leaks("16 MiB")
        def test_torch_leak(simulated_device):
            simulated_device.torch_alloc(64 * MiB)          # a tensor kept alive

        @pytest.mark.limit_gpu_leaks("16 MiB")
        def test_non_torch_leak(simulated_device):
            simulated_device.non_torch_alloc(32 * MiB)      # a workspace never freed

        @pytest.mark.limit_gpu_leaks("16 MiB")
        def test_freed(simulated_device):
            simulated_device.transient_torch(1 << 30)       # cached, then emptied
            simulated_device.transient_non_torch(512 * MiB)

        @pytest.mark.limit_gpu_leaks("16 MiB")
        def test_small_leak(simulated_device):
            simulated_device.torch_alloc(8 * MiB)
            simulated_device.non_torch_alloc(16 * MiB)      # at the limit is not over it

        @pytest.mark.limit_gpu_leaks(torch="128 MiB", non_torch="1 MiB")
        def test_separate_limits(simulated_device):
            simulated_device.torch_alloc(64 * MiB)
    """)
    result = _run(inner)
    result.assert_outcomes(passed=3, failed=2)
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*GPU memory leaked on cuda:0 (simulated): held after the test (after gc.collect() and "
        "empty_cache) minus held before it ?@pytest.mark.limit_gpu_leaks('16 MiB')?",
    ])
    result.stdout.fnmatch_lines([
        "*torch      +64.0 MiB of tensors still alive > limit 16.0 MiB "
        "(+64.0 MiB still reserved by torch's allocator)",
    ])
    result.stdout.fnmatch_lines(["*non-torch  +32.0 MiB still held outside torch > limit 16.0 MiB"])
    # Each failure names only its own kind.
    torch_block = out[out.index("_ test_torch_leak _"):out.index("_ test_non_torch_leak _")]
    assert "non-torch  +" not in torch_block
    non_torch_block = out[out.index("_ test_non_torch_leak _"):]
    assert "still reserved by torch" not in non_torch_block.split("short test summary")[0]


def _usage(**figures: object) -> GpuMemoryUsage:
    base: dict[str, object] = dict(
        peak=0, torch_allocated=0, torch_reserved=0, non_torch=0, non_torch_at_end=0,
        transient_non_torch=0, held_torch_allocated=0, held_torch_reserved=0, held_non_torch=0,
        torch_status="available", device="cuda:0", reader="cuda", num_samples=3, interval_s=0.0005)
    base.update(figures)
    return GpuMemoryUsage(**base)  # type: ignore[arg-type]


def test_torch_leak_counts_tensors_not_the_segment_they_pin() -> None:
    """Regression (issue 19): a live 1.5 MiB tensor pins a 20 MiB segment of torch's allocator
    that empty_cache cannot release; compared on reserved bytes it "leaked +20 MiB"."""
    from vllm_mem.pytest_plugin import _leak_failure

    usage = _usage(held_torch_allocated=3 * MiB // 2, held_torch_reserved=20 * MiB)
    assert _leak_failure(usage, 16 * MiB, None, "@pytest.mark.limit_gpu_leaks('16 MiB')") == ""
    message = _leak_failure(usage, MiB, None, "@pytest.mark.limit_gpu_leaks('1 MiB')")
    assert "+1.5 MiB of tensors still alive > limit 1.0 MiB (+20.0 MiB still reserved" in message


def test_torch_only_limit_ignores_other_processes(inner: pytest.Pytester) -> None:
    """Another process (an xdist worker, a CUDA context) allocating on a shared GPU moves the
    device-wide peak; torch_only=True limits this process's tensors only."""
    inner.makepyfile("""
        import pytest
        GiB = 1 << 30

        def work(sim):
            sim.other_process_alloc(4 * GiB)      # a neighbour on the same GPU
            sim.torch_alloc(GiB)
            sim.torch_free(GiB)

        @pytest.mark.limit_gpu_memory("2 GiB")
        def test_device_wide(simulated_device):
            work(simulated_device)

        @pytest.mark.limit_gpu_memory("2 GiB", torch_only=True)
        def test_torch_only(simulated_device):
            work(simulated_device)

        @pytest.mark.limit_gpu_memory("512 MiB", torch_only=True)
        def test_torch_only_over(simulated_device):
            work(simulated_device)
    """)
    result = _run(inner)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*FAILED*test_device_wide*", "*FAILED*test_torch_only_over*"])
    result.stdout.fnmatch_lines([
        "*GPU memory limit exceeded on cuda:0 (simulated): torch-only peak (tensors) 1.0 GiB "
        "(1073741824 bytes) > limit 512.0 MiB*"])


def test_torch_only_must_be_a_bool(inner: pytest.Pytester) -> None:
    inner.makepyfile("""
        import pytest

        @pytest.mark.limit_gpu_memory("2 GiB", torch_only="yes")
        def test_x(simulated_device):
            pass
    """)
    result = _run(inner)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*torch_only must be True or False, got 'yes'*"])


# The documented warm-up (docs/pytest_plugin.md): first-use effects (lazy kernel modules, the
# cuBLAS workspace torch keeps) happen once per process and read as a leak of whichever measured
# test runs first, unless a session fixture triggers them before any measured test.
_FIRST_USE = """
import pytest
MiB = 1 << 20
_loaded = []

def first_use(sim):
    if not _loaded:                 # once per process, like CUDA's lazy module loading
        _loaded.append(True)
        sim.non_torch_alloc(48 * MiB)

@pytest.fixture(scope="session")
def device():
    from vllm_mem.testing import SimulatedDevice
    with SimulatedDevice() as sim:
        yield sim
{warmup}
@pytest.mark.limit_gpu_leaks("16 MiB")
def test_first(device):
    first_use(device)

@pytest.mark.limit_gpu_leaks("16 MiB")
def test_second(device):
    first_use(device)
"""

_WARMUP = """
@pytest.fixture(scope="session", autouse=True)
def gpu_warmup(device):
    first_use(device)               # in a real suite: a matmul on the GPU
"""


@pytest.mark.parametrize("warm", [False, True])
def test_warm_up_keeps_first_use_effects_out_of_leak_checks(inner: pytest.Pytester, warm: bool) -> None:
    inner.makepyfile(_FIRST_USE.replace("{warmup}", _WARMUP if warm else ""))
    result = _run(inner)
    if warm:
        result.assert_outcomes(passed=2)
    else:
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines(["*_ test_first _*", "*non-torch  +48.0 MiB still held*",
                                     "*FAILED*test_first*"])


def test_gpu_marker_is_the_marker_not_a_folder_name(inner: pytest.Pytester) -> None:
    """Regression (issue 19): without a GPU, "gpu" in item.keywords also matched every test in a
    folder named gpu and skipped it."""
    inner.mkpydir("gpu")
    inner.makepyfile(**{"gpu/test_in_gpu_folder": """
        import pytest

        def test_plain():
            pass

        @pytest.mark.gpu
        def test_marked():
            pass
    """})
    result = _run(inner, "-p", "no:randomly")
    if gpu_visible():
        pytest.skip("a GPU is visible: nothing is skipped")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*PASSED*test_plain*", "*SKIPPED*"])


def test_both_markers_on_one_test_report_both(inner: pytest.Pytester) -> None:
    inner.makepyfile("""
        import pytest

        @pytest.mark.limit_gpu_memory("1 GiB")
        @pytest.mark.limit_gpu_leaks("1 MiB")
        def test_both(simulated_device):
            simulated_device.torch_alloc(2 << 30)
    """)
    result = _run(inner)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*GPU memory limit exceeded*peak 2.0 GiB*",
                                 "*GPU memory leaked*", "*torch      +2.0 GiB of tensors still alive*"])


# ---------------------------------------------------------------------------------------------
# --gpu-memory summary and the gpu_memory fixture
# ---------------------------------------------------------------------------------------------

_THREE_PEAKS = """
import pytest
MiB = 1 << 20

@pytest.mark.limit_gpu_memory("80 GiB")
def test_small(simulated_device):
    simulated_device.transient_torch(100 * MiB)

@pytest.mark.limit_gpu_leaks("80 GiB")
def test_large(simulated_device):
    simulated_device.transient_torch(300 * MiB)
    simulated_device.transient_non_torch(700 * MiB)

def test_fixture(simulated_device, gpu_memory):
    simulated_device.transient_torch(200 * MiB)

def test_unmeasured(simulated_device):
    simulated_device.transient_torch(5000 * MiB)
"""


@pytest.mark.parametrize("xdist", [False, True], ids=["serial", "xdist"])
def test_summary_lists_the_largest_peaks(inner: pytest.Pytester, xdist: bool) -> None:
    args = ["--gpu-memory=2"]
    if xdist:
        pytest.importorskip("xdist")
        args += _xdist_args()
    inner.makepyfile(test_three_peaks=_THREE_PEAKS)
    result = _run(inner, *args)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([
        "*= largest 2 GPU memory peaks =*",
        "*1000.0 MiB peak  test_three_peaks.py::test_large  (torch allocated 300.0 MiB, reserved "
        "300.0 MiB, non-torch 700.0 MiB, transient 700.0 MiB; cuda:0 simulated)",
        "*200.0 MiB peak  test_three_peaks.py::test_fixture  (torch allocated 200.0 MiB*",
        "(1 more measured; --gpu-memory=0 shows all)",
    ])
    section = _summary_section(result)
    assert "test_small" not in section
    assert "test_unmeasured" not in section


def _summary_section(result: pytest.RunResult) -> str:
    out = result.stdout.str()
    return out.split("GPU memory peaks")[1].split("short test summary info")[0]


def _xdist_args() -> list[str]:
    load = [] if _autoloads("xdist") else ["-p", "xdist"]
    return [*load, "-n", "2"]


def _autoloads(name: str) -> bool:
    return not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") and any(
        ep.name == name for ep in importlib.metadata.entry_points(group="pytest11"))


def test_summary_of_all_and_of_none(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_three_peaks=_THREE_PEAKS)
    result = _run(inner, "--gpu-memory=0")
    result.stdout.fnmatch_lines(["*= GPU memory peaks =*", "*test_large*", "*test_fixture*",
                                 "*test_small*"])
    inner.makepyfile(test_three_peaks="def test_cpu():\n    pass\n")
    result = _run(inner, "--gpu-memory")
    result.stdout.fnmatch_lines(["*= largest 10 GPU memory peaks =*",
                                 "no test measured GPU memory*"])


def test_summary_is_off_without_the_option(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_three_peaks=_THREE_PEAKS)
    result = _run(inner)
    result.assert_outcomes(passed=4)
    assert "GPU memory peaks" not in result.stdout.str()


def test_gpu_memory_option_needs_a_count(inner: pytest.Pytester) -> None:
    inner.makepyfile("def test_cpu():\n    pass\n")
    result = _run(inner, "--gpu-memory", "test_gpu_memory_option_needs_a_count.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpu-memory takes a number of tests*write --gpu-memory=N*"])
    for bad, message in (("--gpu-memory=-1", "needs N >= 0"),
                         ("--gpu-memory-interval=0", "0.0 s is outside [[]1e-5, 60]"),
                         ("--gpu-memory-interval=fast", "'fast' is not seconds")):
        result = _run(inner, bad)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, bad
        result.stderr.fnmatch_lines([f"*{message}*"])


def test_fixture_hands_the_test_its_profiler(inner: pytest.Pytester) -> None:
    inner.makepyfile("""
        import pytest
        from vllm_mem.mem_utils import MemoryProfilingResult
        MiB = 1 << 20

        def test_window(simulated_device, gpu_memory):
            simulated_device.torch_alloc(512 * MiB)         # before the window: not counted
            gpu_memory.start()
            assert gpu_memory.running
            simulated_device.torch_alloc(256 * MiB)
            simulated_device.transient_non_torch(64 * MiB)
            usage = gpu_memory.stop()
            assert not gpu_memory.running
            assert usage is gpu_memory.usage
            assert gpu_memory.peak == 320 * MiB
            assert (usage.torch_allocated, usage.torch_reserved) == (256 * MiB, 256 * MiB)
            assert (usage.non_torch, usage.non_torch_at_end) == (64 * MiB, 0)
            assert usage.held_torch_allocated == 256 * MiB and usage.held_non_torch == 0
            assert isinstance(gpu_memory.result, MemoryProfilingResult)
            assert gpu_memory.result.torch_peak_increase == 256 * MiB
            assert usage.num_samples >= 2 and usage.reader == "simulated"
            gpu_memory.check_limit("320 MiB")
            with pytest.raises(AssertionError, match=r"peak 320.0 MiB .* > limit 319.0 MiB"):
                gpu_memory.check_limit("319 MiB")

        def test_with_block_and_reuse(simulated_device, gpu_memory):
            with gpu_memory:
                simulated_device.transient_torch(128 * MiB)
            first = gpu_memory.peak
            with gpu_memory:
                pass
            assert (first, gpu_memory.peak) == (128 * MiB, 0)

        def test_misuse(simulated_device, gpu_memory):
            with pytest.raises(RuntimeError, match="no finished window"):
                gpu_memory.peak
            with pytest.raises(RuntimeError, match="not started"):
                gpu_memory.stop()
            gpu_memory.start()
            with pytest.raises(RuntimeError, match="already running"):
                gpu_memory.start()
            # left running: the fixture stops it at teardown

        def test_check_limit_rejects_bad_sizes(simulated_device, gpu_memory):
            with gpu_memory:
                pass
            with pytest.raises(ValueError, match="check_limit.*'1 GB'"):
                gpu_memory.check_limit("1 GB")
    """)
    _run(inner).assert_outcomes(passed=4)


def test_a_limit_marker_sees_peaks_before_the_fixture_resets_them(inner: pytest.Pytester) -> None:
    # The profiler's start() resets torch's peak statistics, as memory_profiling does; the
    # marker's own window still has the earlier peak from its sampler.
    inner.makepyfile("""
        import pytest
        MiB = 1 << 20

        @pytest.mark.limit_gpu_memory("1 GiB")
        def test_nested(simulated_device, gpu_memory):
            simulated_device.torch_alloc(1536 * MiB)
            simulated_device.wait_for_reads(2)      # the marker's sampler sees the tensor
            simulated_device.torch_free(1536 * MiB)
            with gpu_memory:                        # empties the cache, resets the peak
                simulated_device.transient_torch(10 * MiB)
            assert gpu_memory.peak == 10 * MiB
    """)
    result = _run(inner)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*peak 1.5 GiB*> limit 1.0 GiB*", "*torch allocated *+1.5 GiB*"])


# ---------------------------------------------------------------------------------------------
# Bad marker arguments and sizes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("marker", "message"), [
    ("limit_gpu_memory('2 GB')", "unit 'GB', read two ways (2 x 10**9 bytes = 1.86 GiB, or 2 GiB = 2147483648 "
                                 "bytes); use a binary unit*did you mean 'GiB'"),
    ("limit_gpu_memory('two GiB')", "'two GiB' is not a size"),
    ("limit_gpu_memory()", "takes one size"),
    ("limit_gpu_memory('1 GiB', '2 GiB')", "takes one size"),
    ("limit_gpu_memory('1 GiB', limit='2 GiB')", "takes one size"),
    ("limit_gpu_memory(-5)", "-5 is negative"),
    ("limit_gpu_memory(1.5)", "1.5 is not a size"),
    ("limit_gpu_leaks()", "takes one size for torch and non-torch"),
    ("limit_gpu_leaks(torch='1 MB')", "unit 'MB'*did you mean 'MiB'"),
    ("limit_gpu_leaks('1 MiB', cuda=True)", "takes one size"),
])
def test_bad_marker_arguments_error_naming_marker_and_value(inner: pytest.Pytester, marker: str,
                                                            message: str) -> None:
    inner.makepyfile(f"""
        import pytest

        @pytest.mark.{marker}
        def test_marked(simulated_device):
            raise AssertionError("must not run")
    """)
    result = _run(inner)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        f"*bad GPU memory marker on test_bad_marker_arguments_error_naming_marker_and_value.py"
        f"::test_marked: @pytest.mark.{marker.split('(')[0]}(*{message}*"])
    assert "must not run" not in result.stdout.str()


@pytest.mark.parametrize(("text", "expected"), [
    ("2 GiB", 2 * GiB), ("512MiB", 512 * MiB), ("1.5 GiB", 3 * GiB // 2), ("0 B", 0),
    ("  64 KiB ", 64 << 10), ("1 TiB", 1 << 40), ("0.1 GiB", 107374182), (4096, 4096), (0, 0),
])
def test_parse_size_accepts_binary_units(text: object, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("1.5 GB", "unit 'GB'.*did you mean 'GiB'"), ("2G", "unit 'G'.*did you mean 'GiB'"),
    ("512 mib", "unit 'mib'.*did you mean 'MiB'"), ("10 parsecs", "unit 'parsecs'"),
    ("2 GiB of memory", "not a size"), ("-1 GiB", "not a size"), ("1e3 MiB", "not a size"),
    ("512", "not a size"), ("", "not a size"), (True, "not a size"), (2.0, "not a size"),
    (None, "not a size"), (-1, "negative"),
])
def test_parse_size_refuses_the_rest(text: object, message: str) -> None:
    with pytest.raises(ValueError, match=f"^limit: .*{message}"):
        parse_size(text, "limit")


# ---------------------------------------------------------------------------------------------
# No device, no CUDA context: nothing measured unless asked
# ---------------------------------------------------------------------------------------------

_PROBE_CONFTEST = """
import json, os, sys
from vllm_mem.testing import SimulatedDevice

# Stands in for the real device for the whole session: any read the plugin makes lands here.
_SIM = SimulatedDevice()

def pytest_configure(config):
    _SIM.install()

def pytest_unconfigure(config):
    with open("/proc/self/maps") as f:
        maps = f.read()
    cuda = sorted({line.split()[-1] for line in maps.splitlines()
                   if any(n in line for n in ("libcuda.so", "libcudart", "libnvidia-ml"))})
    with open(os.environ["PROBE_OUT"], "w") as f:
        json.dump({"mem_info_calls": _SIM.mem_info_calls, "empty_cache_calls": _SIM.empty_cache_calls,
                   "reset_peak_calls": _SIM.reset_peak_calls, "cuda_libs": cuda,
                   "torch": "torch" in sys.modules}, f)
    _SIM.uninstall()
"""


def _probe(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tests: str,
           *args: str) -> dict[str, object]:
    pytester.makeconftest(_PROBE_CONFTEST)
    pytester.makepyfile(tests)
    out = pytester.path / "probe.json"
    monkeypatch.setenv("PROBE_OUT", str(out))
    _subprocess_pythonpath(monkeypatch)
    result = pytester.runpytest_subprocess(*_plugin_args(), *_QUIET, *args)
    assert result.ret == 0, result.stdout.str()
    probe: dict[str, object] = json.loads(out.read_text())
    return probe


def test_unmeasured_tests_never_touch_the_device(inner: pytest.Pytester,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    probe = _probe(inner, monkeypatch, """
        import pytest

        def test_cpu():
            pass

        @pytest.mark.parametrize("n", [1, 2])
        def test_more_cpu(n):
            assert n
    """, "--gpu-memory", "--gpu-per-worker")
    assert probe == {"mem_info_calls": 0, "empty_cache_calls": 0, "reset_peak_calls": 0,
                     "cuda_libs": [], "torch": False}


def test_the_probe_sees_a_measured_test(inner: pytest.Pytester,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # The control for the test above: the same probe, one marked test, and the device is read.
    probe = _probe(inner, monkeypatch, """
        import pytest

        @pytest.mark.limit_gpu_memory("1 GiB")
        def test_measured():
            pass
    """)
    assert isinstance(probe["mem_info_calls"], int) and probe["mem_info_calls"] >= 2
    assert probe["empty_cache_calls"] == 2 and probe["reset_peak_calls"] == 1


@pytest.mark.skipif(gpu_visible(), reason="a GPU is visible here")
def test_without_a_gpu_marked_tests_skip_with_the_reason(inner: pytest.Pytester) -> None:
    inner.makepyfile("""
        import pytest

        @pytest.mark.limit_gpu_memory("1 GiB")
        def test_limit():
            raise AssertionError("must not run")

        @pytest.mark.limit_gpu_leaks("1 MiB")
        def test_leaks():
            raise AssertionError("must not run")

        def test_fixture(gpu_memory):
            gpu_memory.start()
            raise AssertionError("must not run")

        @pytest.mark.gpu
        def test_gpu():
            raise AssertionError("must not run")
    """)
    result = _run(inner, "--gpu-memory")
    result.assert_outcomes(skipped=4)
    result.stdout.fnmatch_lines([
        "SKIPPED*no NVIDIA GPU visible (no /dev/nvidia* node, or CUDA_VISIBLE_DEVICES hides all) "
        "and no simulated device installed"])


# ---------------------------------------------------------------------------------------------
# pytest-xdist
# ---------------------------------------------------------------------------------------------


def test_gpu_per_worker_gives_each_worker_its_own_device(inner: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("xdist")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    monkeypatch.delenv("VLLM_MEM_OWN_GPU", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)   # when this run is itself a worker
    out = inner.path / "seen"
    out.mkdir()
    # What a conftest sees at import: the worker's GPU is chosen before conftests run.
    inner.makeconftest(f"""
        import os
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        if worker:
            with open(os.path.join({str(out)!r}, worker + ".conftest"), "w") as f:
                f.write(os.environ["CUDA_VISIBLE_DEVICES"])
    """)
    inner.makepyfile(f"""
        import os, pytest

        @pytest.mark.parametrize("i", range(4))
        def test_record(i):
            worker = os.environ["PYTEST_XDIST_WORKER"]
            path = os.path.join({str(out)!r}, worker)
            with open(path, "w") as f:
                f.write(os.environ["CUDA_VISIBLE_DEVICES"] + " " + os.environ["VLLM_MEM_OWN_GPU"])
    """)
    result = _run(inner, "--gpu-per-worker", *_xdist_args())
    result.assert_outcomes(passed=4)
    seen = {p.name: p.read_text() for p in out.iterdir()}
    assert seen == {"gw0": "3 1", "gw1": "5 1", "gw0.conftest": "3", "gw1.conftest": "5"}


def test_shared_device_note_under_xdist(monkeypatch: pytest.MonkeyPatch) -> None:
    usage = GpuMemoryUsage(peak=GiB, torch_allocated=0, torch_reserved=0, non_torch=GiB,
                           non_torch_at_end=0, transient_non_torch=GiB, held_torch_allocated=0,
                           held_torch_reserved=0, held_non_torch=0, torch_status="no_torch",
                           device="cuda:0", reader="cuda", num_samples=3, interval_s=0.0005)
    monkeypatch.delenv("VLLM_MEM_OWN_GPU", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    assert usage.shared_device_note == ""
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
    assert "worker gw1 of 4 may share cuda:0" in usage.shared_device_note
    assert "cannot be attributed per process" in usage.shared_device_note
    # The note names which figures are device-wide and which are this process's own.
    assert "device-wide: peak, non_torch, non_torch_at_end, transient_non_torch, held_non_torch" \
        in usage.shared_device_note
    assert "this process's own: torch_allocated, torch_reserved" in usage.shared_device_note
    assert "torch_only=True" in usage.shared_device_note
    assert set(GpuMemoryUsage.DEVICE_WIDE) | set(GpuMemoryUsage.PROCESS_LOCAL) == {
        f for f in usage.to_dict() if isinstance(usage.to_dict()[f], int) and f != "num_samples"}
    monkeypatch.setenv("VLLM_MEM_OWN_GPU", "1")
    assert usage.shared_device_note == ""
    monkeypatch.setenv("VLLM_MEM_OWN_GPU", "0")     # fewer GPUs than workers
    assert usage.shared_device_note != ""
    assert "torch allocator figures unavailable (no_torch)" in usage.split()
    simulated = GpuMemoryUsage(**{**usage.to_dict(), "reader": "simulated"})
    assert simulated.shared_device_note == ""
    assert GpuMemoryUsage.from_dict(usage.to_dict()) == usage


# ---------------------------------------------------------------------------------------------
# A real GPU
# ---------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_visible(), reason="no NVIDIA GPU visible")
def test_real_torch_tensors_over_and_under_the_limit(inner: pytest.Pytester,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    _subprocess_pythonpath(monkeypatch)
    inner.makepyfile("""
        import pytest, torch

        if not torch.cuda.is_available():
            pytest.skip("torch without CUDA", allow_module_level=True)

        @pytest.fixture(autouse=True)
        def cuda_ready():
            torch.zeros(1, device="cuda")        # context and allocator before the window
            torch.cuda.synchronize()

        @pytest.mark.limit_gpu_memory("512 MiB")
        def test_over():
            x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
            x.fill_(1)
            torch.cuda.synchronize()

        @pytest.mark.limit_gpu_memory("1 GiB")
        def test_under():
            x = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
            x.fill_(1)
            torch.cuda.synchronize()

        KEEP = []

        @pytest.mark.limit_gpu_leaks("16 MiB")
        def test_leak():
            KEEP.append(torch.empty(64 << 20, dtype=torch.uint8, device="cuda"))
    """)
    # Its own interpreter: this process keeps no CUDA context.
    result = inner.runpytest_subprocess(*_plugin_args(), *_QUIET, "-rA", "--gpu-memory")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        "*GPU memory limit exceeded on cuda:0: peak *> limit 512.0 MiB*",
        "*torch allocated  *+1.0 GiB*", "*torch reserved *+1.0 GiB*", "*non-torch *",
        "*sampler's transient peak the allocator missed*",
    ])
    result.stdout.fnmatch_lines(["*torch      +64.0 MiB of tensors still alive*+64.0 MiB still reserved*"])
    result.stdout.fnmatch_lines(["*= largest 10 GPU memory peaks =*", "*GiB peak  *test_over*"])



# ---------------------------------------------------------------------------------------------
# The simulated device's helpers the tests above drive
# ---------------------------------------------------------------------------------------------


def test_transient_helpers_leave_the_device_as_torch_and_a_workspace_would() -> None:
    from vllm_mem.sampler import MemorySampler
    from vllm_mem.testing import SimulatedDevice

    with SimulatedDevice() as sim:
        sim.transient_torch(64 * MiB)
        state = sim.state(0)
        assert (state.torch_allocated_bytes, state.torch_reserved_bytes,
                state.torch_allocated_peak_bytes) == (0, 64 * MiB, 64 * MiB)
        with MemorySampler(interval_s=0.0005) as sampler:
            sim.transient_non_torch(128 * MiB)
        assert sim.state(0).non_torch_bytes == 0
        assert sampler.peak_non_torch_memory == 128 * MiB
        # Without a running sampler nobody reads the device: the wait gives up, the buffer is freed.
        with pytest.raises(TimeoutError):
            sim.transient_non_torch(MiB, timeout_s=0.01)
        assert sim.state(0).non_torch_bytes == 0
