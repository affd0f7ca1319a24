"""The GitHub workflows (.github/workflows) and their local action, as data: triggers, caches and
their keys, the artifacts, the shards of the full upstream profile and the job that merges them."""

from __future__ import annotations

import re
from pathlib import Path

import yaml  # a test dependency: this file must fail, not skip, without it

from conftest import REPO_ROOT

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
CACHES_ACTION = REPO_ROOT / ".github" / "actions" / "fca-caches" / "action.yml"


def _load(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text())
    assert isinstance(doc, dict), path
    return doc


def _on(doc: dict):
    # YAML 1.1 reads a bare `on:` key as the boolean True.
    return doc["on"] if "on" in doc else doc[True]


def _steps(doc: dict) -> list[dict]:
    return [step for job in doc["jobs"].values() for step in job.get("steps", [])]


def _runs(doc: dict) -> list[str]:
    return [step.get("run", "") for step in _steps(doc)]


def _uses(doc: dict) -> list[str]:
    return [step.get("uses", "") for step in _steps(doc)]


def _uploads(job: dict) -> list[dict]:
    return [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]


def _cache_steps() -> dict[str, dict]:
    """path -> the `with` of the actions/cache step that caches it (in the local caches action)."""
    steps = _load(CACHES_ACTION)["runs"]["steps"]
    caches = {}
    for step in steps:
        if step.get("uses", "").startswith("actions/cache@"):
            for path in step["with"]["path"].split():
                caches[path] = step["with"]
    return caches


def test_every_workflow_is_valid_yaml_with_triggers_and_jobs():
    files = sorted(WORKFLOWS.glob("*.yml")) + sorted(WORKFLOWS.glob("*.yaml"))
    assert {f.name for f in files} >= {"ci.yml", "source-build.yml", "upstream-full.yml"}
    for f in files:
        doc = _load(f)
        assert "on" in doc or True in doc, f"{f.name}: no `on` key"
        assert _on(doc), f"{f.name}: empty `on`"
        assert isinstance(doc.get("jobs"), dict) and doc["jobs"], f"{f.name}: no jobs"
        for name, job in doc["jobs"].items():
            assert "runs-on" in job and job.get("steps"), f"{f.name}: job {name} lacks runs-on or steps"


def test_ci_workflow_runs_the_ci_entry_point():
    doc = _load(WORKFLOWS / "ci.yml")
    assert any("bash .ci/run" in run for run in _runs(doc))


def test_ci_cancels_an_older_run_of_the_same_ref():
    concurrency = _load(WORKFLOWS / "ci.yml")["concurrency"]
    assert "${{ github.ref }}" in concurrency["group"] and concurrency["cancel-in-progress"] is True


def test_the_caches_are_keyed_by_what_fills_them():
    caches = _cache_steps()
    want = {
        "~/.cache/fca/wheels": ["tools/requirements/**"],
        "~/.cache/ccache": ["patches/**"],
        "~/.cache/fca/overlay/build": ["patches/**", "tools/lib/overlay/**"],
        "~/.cache/fca/test-caches": ["patches/**", "tools/requirements/**"],
        "~/.cache/fca/downloads": ["patches/pin.sha256"],
    }
    assert set(want) <= set(caches)
    for path, inputs in want.items():
        key = caches[path]["key"]
        hashed = re.findall(r"hashFiles\(([^)]*)\)", key)
        assert hashed, f"{path}: key {key!r} hashes no files"
        for pattern in inputs:
            assert f"'{pattern}'" in hashed[0], f"{path}: key {key!r} does not hash {pattern}"
            assert list(REPO_ROOT.glob(pattern)), f"{pattern} matches no file"
        assert caches[path]["restore-keys"] == key.split("${{")[0], path  # a stale cache is a warm start
    keys = [w["key"].split("${{")[0] for w in caches.values()]
    assert len(set(keys)) == len(set(map(id, caches.values()))), "two caches share a key prefix"


def test_ci_frees_disk_then_restores_the_caches_before_running():
    (job,) = _load(WORKFLOWS / "ci.yml")["jobs"].values()
    steps = job["steps"]
    order = [next(i for i, s in enumerate(steps) if pred(s)) for pred in (
        lambda s: "rm -rf /host/" in s.get("run", ""),
        lambda s: s.get("uses") == "./.github/actions/fca-caches",
        lambda s: "bash .ci/run" in s.get("run", ""),
    )]
    assert order == sorted(order)
    mounted = {v.split(":")[1] for v in job["container"]["volumes"]}
    emptied = set(re.findall(r"(/host/\w+)/\*", steps[order[0]]["run"]))
    assert emptied == mounted


def test_ci_uploads_the_reports_even_when_it_fails():
    (job,) = _load(WORKFLOWS / "ci.yml")["jobs"].values()
    (upload,) = _uploads(job)
    assert upload["if"] == "always()" and upload["with"]["path"] == "reports/"


def test_the_full_profile_shards_cover_each_index_once():
    doc = _load(WORKFLOWS / "upstream-full.yml")
    assert list(_on(doc)) == ["workflow_dispatch"]
    job = doc["jobs"]["shard"]
    shards = job["strategy"]["matrix"]["shard"]
    (command,) = [s["run"] for s in job["steps"] if "run_upstream_tests.py" in s.get("run", "")]
    assert "--profile full" in command and "--junit-dir reports/junit" in command
    (n,) = re.findall(r"--shard \$\{\{ matrix\.shard \}\}/(\d+)", command)
    assert sorted(shards) == list(range(1, int(n) + 1))
    assert job["strategy"]["fail-fast"] is False
    (upload,) = _uploads(job)
    assert upload["if"] == "always()" and "${{ matrix.shard }}" in upload["with"]["name"]


def test_the_merge_job_needs_every_shard_and_imports_their_junit():
    doc = _load(WORKFLOWS / "upstream-full.yml")
    merge = doc["jobs"]["merge"]
    assert merge["needs"] in ("shard", ["shard"]) and merge["if"] == "always()"
    (download,) = [s for s in merge["steps"] if s.get("uses", "").startswith("actions/download-artifact@")]
    shard_upload = _uploads(doc["jobs"]["shard"])[0]["with"]["name"]
    assert download["with"]["pattern"] == shard_upload.replace("${{ matrix.shard }}", "*")
    (command,) = [s["run"] for s in merge["steps"] if "run_upstream_tests.py" in s.get("run", "")]
    assert f"--from-junit {download['with']['path']}/*/junit/*.xml" in command and "--profile full" in command
    assert _uploads(merge)[0]["if"] == "always()"


def test_source_build_workflow_is_manual_and_runs_the_whole_path():
    doc = _load(WORKFLOWS / "source-build.yml")
    on = _on(doc)
    assert isinstance(on, dict) and list(on) == ["workflow_dispatch"]
    runner = on["workflow_dispatch"]["inputs"]["runner"]
    assert runner["default"] == "ubuntu-latest"
    (job,) = doc["jobs"].values()
    assert job["runs-on"] == "${{ inputs.runner }}"
    runs = _runs(doc)
    script = "\n".join(runs)
    assert any(u.startswith("actions/checkout@") for u in _uses(doc))
    setup_python = [s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python@")]
    assert setup_python and str(setup_python[0]["with"]["python-version"]) == "3.11"
    order = [
        "pip install -e .",
        "git clone --recursive",
        "python tools/apply_patches.py --torch-src pytorch",
        "python tools/build_torch.py --torch-src pytorch --mode develop",
        "python tools/run_upstream_tests.py --torch-build pytorch --profile full",
    ]
    positions = [script.find(text) for text in order]
    assert -1 not in positions, dict(zip(order, positions))
    assert positions == sorted(positions)
    clone = next(r for r in runs if "git clone" in r)
    assert "https://github.com/pytorch/pytorch" in clone and "v2.6.0" in clone and clone.rstrip().endswith(" pytorch")
    upload = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert upload and upload[0].get("if") == "always()" and upload[0]["with"]["path"]
