"""The import direction between the apps (docs/architecture.md), checked on every import statement.

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


def imports_of(name: str, *, type_checking: bool = True) -> set[str]:
    """Every module named by an import statement of ``name``, at any depth (lazy imports too);
    without those under ``if TYPE_CHECKING:`` when ``type_checking`` is False."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    skipped = set()
    if not type_checking:
        blocks = [
            node for node in ast.walk(tree) if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        ]
        skipped = {id(node) for block in blocks for node in ast.walk(block)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # "from scoring.priming import runner" imports the module scoring.priming.runner (and,
            # as every import of a module does, its package's __init__, which is not a dependency).
            submodules = {f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES}
            found.update(submodules)
            if len(submodules) < len(node.names):
                found.add(base)
    return found


def project_imports(name: str, *, type_checking: bool = True) -> set[str]:
    return {target for target in imports_of(name, type_checking=type_checking) if target in MODULES}


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
        "scoring.pictures",
        "scoring.priming.clipscore",
        "scoring.priming.calibration",
        "scoring.export.formats",
        "scoring.export.files",
        "scoring.export.polaris",
        "scoring.progress.estimate",
        "scoring.progress.chart",
        "annotators.competency.pcm",
        "annotators.competency.rater_stats",
        "annotators.competency.svg",
        "tools.simulator.crowd",
    }
    assert expected <= PURE, sorted(expected - PURE)


def reached_from(name: str) -> set[str]:
    """The project modules that importing ``name`` may load: its imports, theirs, and so on."""
    seen, todo = set(), [name]
    while todo:
        for target in project_imports(todo.pop()) - seen:
            seen.add(target)
            todo.append(target)
    return seen


def test_the_display_copies_never_reach_the_priming_package():
    # The web process makes display copies; the priming package is the models' (torch on workers).
    reached = reached_from("ratinggame.pairs.derivatives")
    assert sorted(name for name in reached if name.startswith("scoring.priming")) == []


def test_the_modules_of_a_package_import_each_other_without_a_cycle():
    # A module doing two jobs shows up as a cycle (a predictor whose training imports the registry
    # that lists the predictor). Imports inside functions count; type-checking ones do not.
    packages = {name.rpartition(".")[0] for name in MODULES}
    cycles = []
    for package in sorted(packages):
        members = {name for name in MODULES if name.rpartition(".")[0] == package}
        graph = {name: project_imports(name, type_checking=False) & members for name in members}
        cycles.extend(sorted(cycle) for cycle in strongly_connected(graph) if len(cycle) > 1)
    assert cycles == []


def test_the_project_imports_without_a_cycle_across_packages_either():
    # The models of one app importing a registry whose entries import those models (every scorer
    # class loaded by the web process, each new scorer a migration) is a cycle across packages.
    graph = {name: project_imports(name, type_checking=False) for name in MODULES}
    assert sorted(sorted(cycle) for cycle in strongly_connected(graph) if len(cycle) > 1) == []


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components of ``graph``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while (member := stack.pop()) != node:
                component.add(member)
            components.append(component | {node})

    for node in graph:
        if node not in index:
            visit(node)
    return components


def test_pages_take_nothing_from_other_pages():
    # What pages share (who may open them: annotators.roles) has a home of its own; a page module
    # that imports another app's pages for it drags in all of them.
    def is_page(name: str) -> bool:
        return name.rpartition(".")[2].endswith("views")

    against = sorted(
        f"{source} imports {target}"
        for source in MODULES
        if is_page(source)
        for target in project_imports(source)
        if is_page(target)
    )
    assert against == []


def test_the_checker_sees_a_forbidden_import():
    # The rules themselves: a page of annotators importing the game would be refused.
    assert not allowed("annotators.views", "ratinggame.game.rating")
    assert not allowed("scoring.export.bundle", "annotators.services")
    assert allowed("ratinggame.game.rating", "annotators.journey")
    assert allowed("annotators.progress", "ratinggame.models")


# Drawings read top to bottom, one element after the other: split, they would be harder to follow.
LONG_ALLOWED = {
    ("annotators.competency.wright_map", "wright_map_svg"),
    ("annotators.competency.timeline_svg", "timeline_svg"),
}
LONGEST = 80


def long_functions(path: Path, name: str) -> list[str]:
    """The functions of a module over ``LONGEST`` lines (decorators not counted)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{name}.{node.name}: {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > LONGEST
        and (name, node.name) not in LONG_ALLOWED
    ]


def test_no_function_is_over_80_lines_outside_the_drawings():
    """A function that does several things in one body reads as several: the apps', the tools' and
    the benchmarks' functions each fit on a screen."""
    paths = {**MODULES, **{f"bench.{path.stem}": path for path in sorted((ROOT / "bench").glob("*.py"))}}
    found = [entry for name, path in paths.items() for entry in long_functions(path, name)]
    assert found == []


def test_the_length_checker_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x = {index}" for index in range(LONGEST))
    module = tmp_path / "long.py"
    module.write_text(f"def short():\n    return 1\n\n\ndef long():\n{body}\n")
    assert long_functions(module, "long") == ["long.long: 81 lines"]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_imports(name):
    importlib.import_module(name)
