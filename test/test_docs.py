"""docs/ against the data it quotes: patch file names against patches/series, and design.md's
per-patch section against the stack and test/expectations/changes.json, so a renumbered or
reworded stack cannot leave the docs behind."""

from __future__ import annotations

import json
import re

from conftest import REPO_ROOT

DOCS = REPO_ROOT / "docs"
SERIES = (REPO_ROOT / "patches" / "series").read_text().split()
PATCH_NAME = re.compile(r"\b(\d{4}-[a-z0-9-]+\.patch)\b")
# the reference docs; docs/results/ records runs of the stack as it was, under its numbering
REFERENCE_DOCS = sorted(DOCS.glob("*.md")) + [REPO_ROOT / "README.md"]


def design_sections() -> dict[int, str]:
    """design.md's ``### Pn: ...`` sections, by n."""
    text = (DOCS / "design.md").read_text()
    parts = re.split(r"\n### P(\d+): ", text)
    return {int(n): body.split("\n## ", 1)[0] for n, body in zip(parts[1::2], parts[2::2])}


def test_every_patch_file_a_reference_doc_names_is_in_the_series():
    stale = {(doc.name, name) for doc in REFERENCE_DOCS for name in PATCH_NAME.findall(doc.read_text())
             if name not in SERIES}
    assert not stale, f"patch files not in patches/series: {sorted(stale)}"


def test_design_has_one_section_per_patch_naming_its_file():
    sections = design_sections()
    assert sorted(sections) == list(range(1, len(SERIES) + 1))
    for n, body in sections.items():
        assert PATCH_NAME.search(body).group(1) == SERIES[n - 1], f"P{n}'s section names another patch file"


def test_design_s_changes_counts_are_those_of_changes_json():
    # "`test/expectations/changes.json`: N entries." closes a section: the entries of it and the patches before
    patches = [int(e["patch"][:4]) for e in json.loads((REPO_ROOT / "test/expectations/changes.json").read_text())]
    for n, body in design_sections().items():
        for count in re.findall(r"`test/expectations/changes\.json`: (\d+) entries\.", body):
            assert int(count) == sum(p <= n for p in patches), f"P{n}'s section"
