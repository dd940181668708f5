"""Facts about the source tree, counted over its AST: the largest modules, `Any`, `dict[str, Any]`,
`# type: ignore` and import circles between sparklink's modules.

Usage: `python scripts/code_facts.py [SRC_DIR]` (default `src`). An import circle is a strongly connected
set of two or more modules in the graph of imports that run (imports under `if TYPE_CHECKING:` are
left out, imports inside functions are kept: they still tie the modules together); a second count
takes the `TYPE_CHECKING` imports in too. Architecture issues quote these counts before and after a change.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from collections import defaultdict
from pathlib import Path


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(tree: ast.AST, name: str, is_package: bool, typing_too: bool) -> set[str]:
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and is_type_checking(child) and not typing_too:
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    package = name if is_package else name.rpartition(".")[0]
                    for _ in range(child.level - 1):
                        package = package.rpartition(".")[0]
                    base = f"{package}.{base}" if base else package
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in child.names)
            visit(child)

    visit(tree)
    return found


def dict_str_any(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "dict"):
        return False
    key_value = node.slice
    return (
        isinstance(key_value, ast.Tuple)
        and len(key_value.elts) == 2
        and all(isinstance(e, ast.Name) for e in key_value.elts)
        and [e.id for e in key_value.elts] == ["str", "Any"]  # type: ignore[attr-defined]
    )


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of two or more modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    sys.setrecursionlimit(10000)

    def strongconnect(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return out


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "src")
    files = sorted(root.rglob("*.py"))
    names = {module_name(root, f): f for f in files}
    sizes: list[tuple[int, str]] = []
    any_count = dict_any = ignores = 0
    graphs: dict[bool, dict[str, set[str]]] = {False: defaultdict(set), True: defaultdict(set)}
    for name, path in names.items():
        text = path.read_text()
        tree = ast.parse(text)
        sizes.append((len(text.splitlines()), str(path.relative_to(root))))
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == "Any":
                any_count += 1
            if dict_str_any(node):
                dict_any += 1
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT and "type: ignore" in token.string:
                ignores += 1
        for typing_too, graph in graphs.items():
            for target in imports(tree, name, path.name == "__init__.py", typing_too):
                # `from a.b import c` names a module when a.b.c is one; otherwise a.b is the module.
                while target and target not in names:
                    target = target.rpartition(".")[0]
                # A package's __init__ importing its own submodules is not a circle worth counting.
                own = path.name == "__init__.py" and target.rpartition(".")[0] == name
                if target and target != name and not own:
                    graph[name].add(target)
    sizes.sort(reverse=True)
    print(f"modules: {len(files)}; median lines: {sorted(s for s, _ in sizes)[len(sizes) // 2]}")
    print("largest modules:")
    for lines, path in sizes[:8]:
        print(f"  {lines:5d}  {path}")
    print(f"`Any` (names in code): {any_count}")
    print(f"`dict[str, Any]`: {dict_any}")
    print(f"`# type: ignore`: {ignores}")
    for typing_too, graph in graphs.items():
        found = cycles(graph)
        print(f"import circles{' (with TYPE_CHECKING imports)' if typing_too else ''}: {len(found)}")
        for component in found:
            print("  " + " <-> ".join(component))


if __name__ == "__main__":
    main()
