"""CHANGELOG.md: a version policy, and releases newest first, the newest being the version
the package and pyproject.toml give."""

from __future__ import annotations

import re
from pathlib import Path

import minitx

ROOT = Path(__file__).resolve().parent.parent
HEADING = re.compile(r"^## \[(?P<name>[^\]]+)\](?: - (?P<date>\d{4}-\d\d-\d\d))?$", re.M)
VERSION = re.compile(r"\d+\.\d+\.\d+")


def releases(text: str) -> list[tuple[str, str | None]]:
    """(version, date) of every '## [x.y.z] - date' heading, in the file's order; the
    '## [Unreleased]' heading is left out."""
    return [(m["name"], m["date"]) for m in HEADING.finditer(text) if m["name"] != "Unreleased"]


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def test_the_release_reader_on_a_planted_changelog():
    text = "# Changelog\n\n## [Unreleased]\n\n## [0.2.0] - 2026-12-01\n\n## [0.1.0] - 2026-11-25\n"
    assert releases(text) == [("0.2.0", "2026-12-01"), ("0.1.0", "2026-11-25")]
    assert releases("## [Unreleased]\n") == []


def test_the_newest_release_is_the_packages_version():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    found = releases(text)
    assert found, "CHANGELOG.md lists no release"
    project = (ROOT / "pyproject.toml").read_text(encoding="utf-8").split("[project]", 1)[1]
    declared = re.search(r'^version = "([^"]+)"$', project, re.M)
    assert declared, "pyproject.toml's [project] has no version"
    assert found[0][0] == minitx.__version__ == declared.group(1)


def test_releases_are_dated_semantic_versions_newest_first():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    found = releases(text)
    assert all(VERSION.fullmatch(v) and d for v, d in found), found
    versions = [_key(v) for v, _ in found]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
    dates = [d for _, d in found]
    assert dates == sorted(dates, reverse=True)
    headings = HEADING.findall(text)
    if any(name == "Unreleased" for name, _ in headings):
        assert headings[0][0] == "Unreleased", "Unreleased goes above the releases"


def test_the_version_policy_says_what_each_kind_of_release_means():
    policy = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8").split("## Version policy", 1)
    assert len(policy) == 2, "CHANGELOG.md has no '## Version policy' section"
    section = policy[1].split("\n## ", 1)[0]
    for kind in ("**patch**", "**minor**", "**major**"):
        assert kind in section, kind
    for word in ("exercise", "stored outputs", "Errata"):
        assert word in section, word
