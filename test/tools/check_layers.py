#!/usr/bin/env python3
"""Checks that libdtnn's layers include each other in one direction only, and that no files
include each other in a cycle.

Usage: check_layers.py ROOT [--report]

ROOT is a source tree (dtnn's, or a test's). Every `#include "..."` of a C++ file in a layer's
folders is resolved against ROOT and ROOT/include; includes that resolve to no file of the tree
(system and generated headers) are not checked. Prints one line per violation and exits 1 if
there is any, else prints a summary of the layers and exits 0. --report also prints the lines
of each layer and the include graph's largest files: those most included (directly or not), the
headers that pull in the most, and the longest files.
"""
import os
import re
import sys

# The layers, bottom first: a name, and the paths (folders or files) whose sources it owns.
# A path owned by a more specific entry (runtime/train inside runtime) belongs to that entry.
LAYERS = [
    ("base", ["ir/Error.h", "include/dtnn/Version.h"]),
    ("ir", ["ir"]),
    ("frontend", ["frontend"]),
    ("passes", ["passes"]),
    ("runtime", ["runtime"]),
    ("backends", ["backends"]),
    ("train", ["runtime/train"]),
    ("api", ["include/dtnn"]),
    ("tools", ["tools"]),
]

# What each layer may include, besides itself.
ALLOWED = {
    "base": set(),
    "ir": {"base"},
    "frontend": {"base", "ir"},
    "passes": {"base", "ir"},
    "runtime": {"base", "ir"},
    "backends": {"base", "ir", "runtime"},
    "train": {"base", "ir", "runtime", "passes", "frontend"},
    "api": {"base", "ir", "frontend", "passes", "runtime", "backends", "train"},
    "tools": {"base", "ir", "frontend", "passes", "runtime", "backends", "train", "api"},
}

SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".def", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    """The layer owning a path relative to the root (the longest matching entry), or None."""
    best, best_len = None, -1
    for name, owned in LAYERS:
        for prefix in owned:
            if (path == prefix or path.startswith(prefix + "/")) and len(prefix) > best_len:
                best, best_len = name, len(prefix)
    return best


def sources(root):
    for _, owned in LAYERS:
        for prefix in owned:
            full = os.path.join(root, prefix)
            if os.path.isfile(full):
                yield prefix
                continue
            for folder, dirs, files in os.walk(full):
                dirs.sort()
                for f in sorted(files):
                    if f.endswith(SOURCE_SUFFIXES):
                        yield os.path.relpath(os.path.join(folder, f), root)


def resolve(root, including, name):
    """The tree-relative path an include names, or None if it is not a file of the tree."""
    for base in (os.path.dirname(including), "", "include"):
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def cycles(graph):
    """The strongly connected components of more than one file (or a file including itself),
    each as a list of files, found with Tarjan's algorithm (iteratively)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(sorted(component))
    return found


def report(root, graph):
    """Prints the lines of each layer and the include graph's largest files."""
    lines = {}
    for path in graph:
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            lines[path] = sum(1 for _ in f)
    for name, _ in LAYERS:
        files = [p for p in graph if layer_of(p) == name]
        print(f"layer {name}: {sum(lines[p] for p in files)} lines in {len(files)} files")
    reach = {}
    for start in graph:
        seen, todo = set(), [start]
        while todo:
            for child in graph.get(todo.pop(), ()):
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
        reach[start] = seen
    included = {p: sum(1 for s in reach.values() if p in s) for p in graph}
    top = lambda key, files: sorted(files, key=lambda p: (-key(p), p))[:8]
    print("most included (by how many files, directly or not):")
    for p in top(lambda p: included[p], graph):
        print(f"  {p}: {included[p]} files")
    print("headers that pull in the most (files, lines):")
    for p in top(lambda p: len(reach[p]), [p for p in graph if p.endswith(".h")]):
        print(f"  {p}: {len(reach[p])} files, {sum(lines.get(q, 0) for q in reach[p])} lines")
    print("longest files:")
    for p in top(lambda p: lines[p], graph):
        print(f"  {p}: {lines[p]} lines")


def main(argv):
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--report"):
        print("usage: check_layers.py ROOT [--report]", file=sys.stderr)
        return 2
    root = argv[1]
    graph, problems, counts = {}, [], {}
    for path in sorted(set(sources(root))):
        layer = layer_of(path)
        counts[layer] = counts.get(layer, 0) + 1
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        graph[path] = set()
        for match in INCLUDE.finditer(text):
            target = resolve(root, path, match.group(1))
            if target is None:
                continue
            graph[path].add(target)
            target_layer = layer_of(target)
            if target_layer is None or target_layer == layer:
                continue
            if target_layer not in ALLOWED[layer]:
                line = text.count("\n", 0, match.start()) + 1
                problems.append(f"{path}:{line}: layer '{layer}' includes '{target}' of layer "
                                f"'{target_layer}', which it may not (it may include: "
                                f"{', '.join(sorted(ALLOWED[layer])) or 'nothing'})")
    for component in cycles(graph):
        problems.append("include cycle between " + ", ".join(component))
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layering problem(s)")
        return 1
    summary = ", ".join(f"{name} {counts.get(name, 0)}" for name, _ in LAYERS)
    print(f"layers: files per layer: {summary}; no upward include, no include cycle")
    if len(argv) == 3:
        report(root, graph)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
