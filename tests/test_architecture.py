"""The import direction between the apps (ARCHITECTURE.md), checked on every import statement.

The floor that any module may import: every app's ``models``, the Django-free pure modules
(consensus, agreement, PCM, formulas: they import no Django, Celery or REST framework, and
only other pure modules), and ``ratinggame.background``, ``ratinggame.env``,
``ratinggame.celery``. Above the floor imports go one way: ``ratinggame`` (site, game, pages,
API) -> ``scoring`` -> ``annotators``; and ``scoring`` reads only the rules, scale, roles and
competency of ``annotators``, never its pages or services. ``tools`` (the HTTP simulator)
imports only the floor.
"""

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ratinggame", "annotators", "scoring", "tools")
FRAMEWORKS = ("django", "rest_framework", "celery", "kombu", "drf_spectacular", "django_filters")
INFRASTRUCTURE = {"ratinggame.background", "ratinggame.env", "ratinggame.celery"}
# What scoring may read of annotators above the floor: the journey's rules, the scale, the
# roles (who may open the research pages) and the competency analysis (exported with the data).
SCORING_READS_OF_ANNOTATORS = ("annotators.journey", "annotators.scale", "annotators.roles", "annotators.competency")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                modules[module_name(path)] = path
    return modules


MODULES = project_modules()


def imports_of(name: str) -> set[str]:
    """Every module named by an import statement of ``name``, at any depth (lazy imports too)."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            # "from scoring.priming import runner" imports the module scoring.priming.runner.
            found.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES)
    return found


def project_imports(name: str) -> set[str]:
    return {target for target in imports_of(name) if target in MODULES}


def pure_modules() -> set[str]:
    """Modules that import no framework, and only pure project modules (a fixed point)."""
    candidates = {name for name in MODULES if not any(i.split(".")[0] in FRAMEWORKS for i in imports_of(name))}
    changed = True
    while changed:
        changed = False
        for name in list(candidates):
            if not project_imports(name) <= candidates:
                candidates.discard(name)
                changed = True
    return candidates


PURE = pure_modules()


def floor(name: str) -> bool:
    return name in PURE or name in INFRASTRUCTURE or name.endswith(".models") or name == "ratinggame.models"


def allowed(source: str, target: str) -> bool:
    source_app, target_app = source.split(".")[0], target.split(".")[0]
    if source_app == target_app or floor(target):
        return True
    if source_app == "ratinggame":
        return True
    if source_app == "scoring":
        return target_app == "annotators" and target.startswith(SCORING_READS_OF_ANNOTATORS)
    return False  # annotators and tools import nothing of the other apps above the floor


def test_imports_go_one_way_between_the_apps():
    against = sorted(
        f"{source} imports {target}"
        for source in MODULES
        for target in project_imports(source)
        if not allowed(source, target)
    )
    assert against == []


def test_the_floor_stands_on_nothing_above_it():
    against = sorted(
        f"{source} imports {target}"
        for source in MODULES
        if floor(source)
        for target in project_imports(source)
        if not floor(target) and target.split(".")[0] != source.split(".")[0]
    )
    assert against == []


def test_the_rules_and_the_arithmetic_are_pure():
    # The modules a reader expects to be free of Django (STYLE.md): tests hit them directly.
    expected = {
        "scoring.consensus",
        "scoring.agreement",
        "scoring.splits",
        "scoring.rating_files",
        "scoring.priming.clipscore",
        "scoring.priming.calibration",
        "scoring.export.formats",
        "scoring.export.files",
        "annotators.competency.pcm",
        "annotators.competency.rater_stats",
        "tools.simulator.crowd",
    }
    assert expected <= PURE, sorted(expected - PURE)


def test_the_checker_sees_a_forbidden_import():
    # The rules themselves: a page of annotators importing the game would be refused.
    assert not allowed("annotators.views", "ratinggame.game.rating")
    assert not allowed("scoring.export.bundle", "annotators.services")
    assert allowed("ratinggame.game.rating", "annotators.journey")
    assert allowed("annotators.progress", "ratinggame.models")


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_imports(name):
    importlib.import_module(name)
