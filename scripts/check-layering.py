#!/usr/bin/env python3
"""Checks that every module includes only the modules it may depend on.

The rules are the table under "## Modules and their rules" in
docs/architecture.md (columns: folder | owns | may depend on). A folder cell
names one or more modules ("export/, import/"); a "may depend on" cell is a
comma-separated list of modules, "std only" (none) or "any".

Every C/C++ file under src/<module>/ and include/tracesmith/<module>/ is read;
each `#include "tracesmith/<other>/..."` (quotes or angle brackets) and each
quoted relative include that reaches into another module's folder
("../export/x.h") must name the module itself or one it may depend on.
Violations are printed as `file:line: <module> may not include <other>
(allowed: ...)`. A folder under src/ or include/tracesmith/ that the table
does not list, or a source file outside any module folder, is an error too.

Exit status: 0 clean, 1 violations, 2 the table cannot be read.
Python 3 standard library only; needs no build.
"""

import argparse
import os
import re
import sys

HEADING = "## Modules and their rules"
FOLDER_COLUMN = "folder"
DEPS_COLUMN = "may depend on"
SOURCE_EXTENSIONS = (".h", ".hh", ".hpp", ".hxx", ".inc", ".ipp", ".c", ".cc", ".cpp", ".cxx",
                     ".cu", ".cuh")
INCLUDE_RE = re.compile(rb'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
MODULE_NAME_RE = re.compile(r"^[a-z0-9_]+$")
ANY = None  # a module that may depend on every other


class TableError(Exception):
    pass


def split_row(line):
    """Cells of a markdown table row; `\\|` inside a cell is not a separator."""
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line)]


def module_names(cell, where):
    names = []
    for item in cell.split(","):
        name = item.strip().strip("`").rstrip("/")
        if not MODULE_NAME_RE.match(name):
            raise TableError(f"{where}: '{item.strip()}' is not a module folder name")
        names.append(name)
    return names


def parse_table(path):
    """{module: set of modules it may depend on, or ANY}; raises TableError."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise TableError(f"{path}: {e.strerror}")
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == HEADING)
    except StopIteration:
        raise TableError(f"{path}: no '{HEADING}' heading")
    i = start + 1
    while i < len(lines) and not lines[i].lstrip().startswith("|"):
        if lines[i].startswith("#"):
            raise TableError(f"{path}:{start + 1}: no table under '{HEADING}'")
        i += 1
    if i + 1 >= len(lines):
        raise TableError(f"{path}:{start + 1}: no table under '{HEADING}'")
    header = [c.lower() for c in split_row(lines[i])]
    if FOLDER_COLUMN not in header or DEPS_COLUMN not in header:
        raise TableError(f"{path}:{i + 1}: the table needs columns '{FOLDER_COLUMN}' and "
                         f"'{DEPS_COLUMN}' (has: {', '.join(header)})")
    folder_col, deps_col = header.index(FOLDER_COLUMN), header.index(DEPS_COLUMN)
    i += 2  # header and |---| rows
    raw = {}  # module -> (deps cell, line number)
    while i < len(lines) and lines[i].lstrip().startswith("|"):
        where = f"{path}:{i + 1}"
        cells = split_row(lines[i])
        if len(cells) != len(header):
            raise TableError(f"{where}: {len(cells)} cells, the header has {len(header)}")
        for name in module_names(cells[folder_col], where):
            if name in raw:
                raise TableError(f"{where}: {name}/ is listed twice")
            raw[name] = (cells[deps_col], i + 1)
        i += 1
    if not raw:
        raise TableError(f"{path}:{start + 1}: the table under '{HEADING}' has no rows")
    rules = {}
    for name, (cell, lineno) in raw.items():
        where = f"{path}:{lineno}"
        text = cell.strip().lower()
        if text == "any":
            rules[name] = ANY
        elif text == "std only":
            rules[name] = set()
        else:
            deps = set(module_names(cell, where))
            unknown = sorted(deps - raw.keys())
            if unknown:
                raise TableError(f"{where}: {name}/ may depend on {', '.join(unknown)}, "
                                 "which the table does not list")
            rules[name] = deps - {name}
    return rules


def module_of(rel):
    """The module owning a path relative to the root, or None."""
    parts = rel.split("/")
    if len(parts) >= 3 and parts[0] == "src":
        return parts[1]
    if len(parts) >= 4 and parts[0] == "include" and parts[1] == "tracesmith":
        return parts[2]
    return None


def source_files(root):
    """(relative path, module or None) of every C/C++ file under src/ and include/tracesmith/."""
    for top in ("src", os.path.join("include", "tracesmith")):
        base = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(SOURCE_EXTENSIONS):
                    rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
                    yield rel, module_of(rel)


def module_folders(root):
    """(relative folder, module) of every folder directly under src/ and include/tracesmith/."""
    for top in ("src", "include/tracesmith"):
        base = os.path.join(root, top)
        if os.path.isdir(base):
            for name in sorted(os.listdir(base)):
                if os.path.isdir(os.path.join(base, name)) and not name.startswith("."):
                    yield f"{top}/{name}/", name


def included_module(root, rel, quote, target):
    """The module an include names, "" for a TraceSmith file outside every module, None when
    it is not a TraceSmith file (system and third-party headers, a header beside the includer)."""
    if target.startswith("tracesmith/"):
        parts = target.split("/")
        return parts[1] if len(parts) >= 3 else ""
    if quote == '"' and ".." in target.split("/"):
        resolved = os.path.normpath(os.path.join(os.path.dirname(rel), target)).replace(os.sep, "/")
        module = module_of(resolved)
        if module is not None:
            return module
        if resolved.startswith(("src/", "include/tracesmith/")) and \
                os.path.isfile(os.path.join(root, resolved)):
            return ""
    return None


def fmt_allowed(deps):
    return ", ".join(sorted(deps)) if deps else "std only"


def check(root, table):
    rules = parse_table(table)
    errors, files, includes = [], 0, 0
    for folder, name in module_folders(root):
        if name not in rules:
            errors.append(f"{folder}: module {name} is not in the table of "
                          f"{os.path.relpath(table, root)} ('{HEADING}')")
    for rel, module in source_files(root):
        files += 1
        if module is None:
            errors.append(f"{rel}: outside every module folder")
            continue
        if module not in rules:
            continue  # reported above
        allowed = rules[module]
        with open(os.path.join(root, rel), "rb") as f:
            for lineno, line in enumerate(f, 1):
                if b"include" not in line:
                    continue
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                other = included_module(root, rel, m.group(1).decode(),
                                        m.group(2).decode("utf-8", "replace"))
                if other is None:
                    continue
                includes += 1
                if other == module or allowed is ANY or other in allowed:
                    continue
                if other == "" or other not in rules:
                    what = other or m.group(2).decode("utf-8", "replace")
                    errors.append(f"{rel}:{lineno}: {module} includes {what}, "
                                  "which is in no module of the table")
                    continue
                errors.append(f"{rel}:{lineno}: {module} may not include {other} "
                              f"(allowed: {fmt_allowed(allowed)})")
    return errors, files, includes


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(
        description="Fails when a module under src/ or include/tracesmith/ includes a module "
        "it may not depend on, by the table under '## Modules and their rules' in "
        "docs/architecture.md. Exit status: 0 clean, 1 violations, 2 the table cannot be read.")
    parser.add_argument("--root", default=os.path.dirname(here),
                        help="the source tree to check (default: this script's repository)")
    parser.add_argument("--table", help="the markdown file with the table "
                        "(default: ROOT/docs/architecture.md)")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    table = os.path.abspath(args.table or os.path.join(root, "docs", "architecture.md"))
    try:
        errors, files, includes = check(root, table)
    except TableError as e:
        print(f"check-layering: {e}", file=sys.stderr)
        return 2
    for e in errors:
        print(e)
    print(f"layering: {files} files, {includes} includes checked, {len(errors)} violations")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
