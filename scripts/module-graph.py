#!/usr/bin/env python3
"""The library's module map and import graph, from the source: lines per top-level module, which
module imports which (`crate::x` paths outside comments), and any cycle between top-level modules.
Exits 1 if there is a cycle.   scripts/module-graph.py [host/src]"""
import re
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else "host/src")
edges, lines = {}, {}
for f in sorted(root.rglob("*.rs")):
    rel = f.relative_to(root)
    top = rel.parts[0].removesuffix(".rs")
    if top in ("main", "lib"):
        continue
    text = f.read_text()
    lines[top] = lines.get(top, 0) + text.count("\n")
    code = "\n".join(l.split("//")[0] for l in text.splitlines())
    for m in re.finditer(r"\bcrate::(\w+)", code):
        if m.group(1) != top:
            edges.setdefault(top, set()).add(m.group(1))

print("lines per module:")
for top, n in sorted(lines.items(), key=lambda kv: -kv[1]):
    print(f"  {n:6}  {top}/")
print("imports:")
for top in sorted(lines):
    print(f"  {top:12} -> {', '.join(sorted(edges.get(top, ()))) or '-'}")


def cycle():
    state = {}

    def visit(n, path):
        state[n] = 1
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                return path + [n, m]
            if m not in state and (c := visit(m, path + [n])):
                return c
        state[n] = 2
        return None

    for n in sorted(lines):
        if n not in state and (c := visit(n, [])):
            return c
    return None


c = cycle()
print("cycle: " + (" -> ".join(c[c.index(c[-1]):]) if c else "none"))
sys.exit(1 if c else 0)
