#!/bin/bash
# SPDX-License-Identifier: MIT
# The README's "Layout" table against the tree: every folder it names exists; in a source
# folder (src/..., include/, tests/sim, tests/support) every file it names exists and every
# .c file there is named, and every .h file too except one beside its .c and a folder's
# x-internal.h; every folder of sources under src/ and include/ has a row, and the tests/
# row names each folder of tests/. A file added, moved or removed without the table fails.
source "$(dirname "$0")/../support/lib.sh" || exit 1
need python3 python3
exec python3 - "$SOURCE_DIR" <<'PY'
import os, re, sys

root = sys.argv[1]
readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
m = re.search(r"^## Layout\n(.*?)^## ", readme, re.S | re.M)
if not m:
    sys.exit("README.md has no '## Layout' section")
rows = {}
for line in m.group(1).splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) < 2 or not cells[0].startswith("`"):
        continue
    names = re.findall(r"`([^`]+)`", cells[1])
    for path in re.findall(r"`([^`]+)`", cells[0]):
        rows[path.rstrip("/")] = [w for n in names for w in n.split()]

def source_folder(path):
    return path == "include" or path.startswith("src") or path in ("tests/sim", "tests/support")

errors = []
for path, names in rows.items():
    full = os.path.join(root, path)
    if not os.path.isdir(full):
        errors.append(f"README Layout names {path}/, which does not exist")
        continue
    if not source_folder(path):
        continue
    files = {f for f in os.listdir(full) if f.endswith((".c", ".h"))}
    named = {n for n in names if re.fullmatch(r"[\w.+-]+\.[ch]", n)}
    for n in sorted(named - files):
        errors.append(f"README Layout names {path}/{n}, which does not exist")
    for f in sorted(files - named):
        # A header beside its .c, or a folder's private one, goes with what the row names.
        if f.endswith(".h") and not path.endswith("include") and (
                f[:-2] + ".c" in named or f.endswith("-internal.h")):
            continue
        errors.append(f"{path}/{f} is not named in README's Layout table")

for dirpath, dirnames, _ in os.walk(root):
    rel = os.path.relpath(dirpath, root)
    if rel == ".":
        dirnames[:] = [d for d in dirnames if d in ("src", "include")]
        continue
    if any(f.endswith((".c", ".h")) for f in os.listdir(dirpath)) and rel not in rows:
        errors.append(f"{rel}/ holds sources and has no row in README's Layout table")

tests_row = " ".join(rows.get("tests", []))
for d in sorted(os.listdir(os.path.join(root, "tests"))):
    if os.path.isdir(os.path.join(root, "tests", d)) and f"tests/{d}" not in rows \
            and f"{d}/" not in tests_row.split():
        errors.append(f"tests/{d}/ is named neither in the tests/ row nor in a row of its own")

for e in errors:
    print(e)
if errors:
    sys.exit(1)
print(f"README Layout: {len(rows)} rows match the tree")
PY
