"""Golden packages: each committed package (``generated/echo``, ``generated/rich``,
``bench/benchenv``) is exactly what its snapshot generates (``orsgen check``), type-checks
under ``mypy --strict`` and basedpyright strict, and is stable under black; generation is
byte-for-byte deterministic, and ``check`` reports a hand-edited copy with a diff."""

from __future__ import annotations

import concurrent.futures
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.timeout(240)

GOLDEN = ROOT / "generated" / "echo"
# echo: the smallest package; rich: renames, enums, nested models, task and terminal tools.
GOLDENS = [
    GOLDEN,
    ROOT / "generated" / "rich",
    ROOT / "bench" / "benchenv",
    ROOT / "bench" / "coinenv",
]


def files_of(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.mark.parametrize("package", GOLDENS, ids=[p.name for p in GOLDENS])
def test_committed_package_is_current(orsgen_subprocess, package: Path) -> None:
    run = orsgen_subprocess(["check", str(package.relative_to(ROOT))])
    assert run.code == 0, run.stdout + run.stderr
    assert run.stdout == ""


@pytest.mark.slow
def test_mypy_strict_passes_on_generated_and_orsgen() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "generated",
            "orsgen",
            "bench/benchenv",
            "bench/coinenv",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=220,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_basedpyright_strict_passes_on_generated_and_orsgen() -> None:
    """pyright strict, as most editors run it ([tool.basedpyright] sets only the mode)."""
    proc = subprocess.run(
        [sys.executable, "-m", "basedpyright", "--pythonpath", sys.executable]
        + ["generated", "orsgen", "bench/benchenv", "bench/coinenv"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=220,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 errors" in proc.stdout


def test_a_hand_edited_copy_fails_check_with_a_diff(tmp_path, orsgen_subprocess) -> None:
    copy = tmp_path / "echo"
    shutil.copytree(GOLDEN, copy, ignore=shutil.ignore_patterns("__pycache__"))
    adapter = copy / "adapter.py"
    original = adapter.read_text()
    assert "def echo(" in original
    adapter.write_text(original.replace("def echo(", "def echo_edited_by_hand(", 1))
    (copy / "rewards.py").unlink()

    run = orsgen_subprocess(["check", str(copy)])

    assert run.code == 1
    diff = run.stdout.splitlines()
    # A unified diff for each stale file: headers, a hunk, the removed and restored lines.
    assert any(line.startswith("--- ") and "adapter.py" in line for line in diff)
    assert any(line.startswith("+++ ") and "adapter.py" in line for line in diff)
    assert any(line.startswith("@@ ") for line in diff)
    assert any(line.startswith("-") and "def echo_edited_by_hand(" in line for line in diff)
    assert any(line.startswith("+") and "def echo(" in line for line in diff)
    assert any(line.startswith("--- /dev/null") for line in diff)  # the deleted file
    assert any(line.startswith("+++ ") and "rewards.py" in line for line in diff)
    assert "2 files in" in run.stderr and "differ from" in run.stderr
    # check never writes.
    assert "echo_edited_by_hand" in adapter.read_text() and not (copy / "rewards.py").exists()


@pytest.mark.slow
def test_generation_is_deterministic_across_hash_seeds(tmp_path, orsgen_subprocess) -> None:
    """Snapshot the example twice (fresh, under different PYTHONHASHSEED values) and once
    over a copy of the committed package: all byte-identical where they should be."""
    fresh = {seed: tmp_path / f"seed{seed}" / "echo" for seed in ("0", "4242")}
    over = tmp_path / "over" / "echo"
    for out in fresh.values():
        out.parent.mkdir()  # -o never makes directories outside the working tree
    shutil.copytree(GOLDEN, over, ignore=shutil.ignore_patterns("__pycache__"))
    target = "examples/echo_env.py"  # relative, as generated/echo was made
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        jobs = [
            pool.submit(
                orsgen_subprocess, [target, "-o", str(out), "-q"], env={"PYTHONHASHSEED": seed}
            )
            for seed, out in fresh.items()
        ]
        jobs.append(
            pool.submit(
                orsgen_subprocess, [target, "-o", str(over), "-q"], env={"PYTHONHASHSEED": "7"}
            )
        )
        runs = [job.result() for job in jobs]
    for run in runs:
        assert run.code == 0, run.stderr
    first, second = (files_of(out) for out in fresh.values())
    assert sorted(first) == sorted(second)
    for name in first:
        assert first[name] == second[name], name
    # Regenerating the example over the committed package changes nothing.
    assert files_of(over) == files_of(GOLDEN)


def test_check_flags_a_leftover_generated_file_but_not_user_files(tmp_path, orsgen_cli) -> None:
    copy = tmp_path / "echo"
    shutil.copytree(GOLDEN, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "NOTES.md").write_text("the user's own file\n")
    assert orsgen_cli(["check", str(copy)]).code == 0  # user files are not staleness
    # A module an older orsgen generated and the current one no longer produces.
    (copy / "old_models.py").write_text("# @generated by orsgen from snapshot.json.\nX = 1\n")
    run = orsgen_cli(["check", str(copy)])
    assert run.code == 1
    assert "old_models.py" in run.stdout and "-X = 1" in run.stdout


@pytest.mark.parametrize("package", GOLDENS, ids=[p.name for p in GOLDENS])
def test_one_black_pass_is_stable(package: Path) -> None:
    """orsgen runs black once per file; black's own two-pass ``format_str`` must leave
    every committed file unchanged, or that one pass is not enough."""
    import black
    from black.mode import Mode, TargetVersion

    from orsgen.generate.render import BLACK_LINE_LENGTH

    mode = Mode(line_length=BLACK_LINE_LENGTH, target_versions={TargetVersion.PY311})
    for path in sorted(package.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert black.format_str(text, mode=mode) == text, path.name
