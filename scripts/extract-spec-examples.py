#!/usr/bin/env python3
"""Write every ```json / ```yaml block of the spec to tests/fixtures/spec/ (one file each).

Usage: scripts/extract-spec-examples.py ../shared/spec/serverless-workflow-spec.md
The files are committed; this script documents where they came from (line numbers are kept
in the names) and can regenerate them when the spec text changes.
"""
import os
import re
import sys

spec = sys.argv[1]
out = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "spec")
os.makedirs(out, exist_ok=True)
lines = open(spec, encoding="utf-8").read().split("\n")
i = 0
while i < len(lines):
    m = re.match(r"^(\s*)```(json|yaml)\s*$", lines[i])
    if not m:
        i += 1
        continue
    indent, lang = len(m.group(1)), m.group(2)
    start = i + 1
    body = []
    i += 1
    while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
        body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
        i += 1
    name = f"L{start:04d}.{lang}"
    with open(os.path.join(out, name), "w", encoding="utf-8") as f:
        f.write("\n".join(body).rstrip() + "\n")
    i += 1
