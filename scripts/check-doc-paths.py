#!/usr/bin/env python3
"""Checks that the repository paths the documentation names exist.

Reads README.md, docs/*.md and every README.md under src/, include/, gpu/,
examples/, python/, tests/, bench/ and fuzz/, and checks four kinds of name:

  1. A path from the repository's root (src/..., docs/..., gpu/...,
     scripts/..., bench/..., tests/..., include/..., python/..., examples/...,
     fuzz/..., .ci/...), backticked or plain: it must exist (a file or a
     folder). A glob (`gpu/*_check.py`, `tests/{a,b}.cc`) must match a file.
     A path ending in "/..." names its folder.
  2. A relative markdown link target, `[text](testing.md#anchor)`: it must
     exist relative to the document's folder.
  3. A shorter path to a source file (`format/replay_graph.cc`,
     `job/rank_summary.h`) or a backticked bare source file name
     (`gpu_loader.cc`): some file in the tree must end with it.
  4. A bare document name (`testing.md`, "see gpu-machine.md"): it must exist
     beside the document, in docs/ or at the root.

A path from the root may also be one relative to the document's folder (a
module's README names `gpu/graph_replayer.cc` for src/replay/gpu/...), and a
path without an extension may name a program by its source
(`fuzz/sbt_reader_fuzzer` is built from fuzz/sbt_reader_fuzzer.cc).

Not checked: paths under build/ (build output), paths holding a placeholder
(`src/<module>/`, `$OUT/...`), absolute paths, URLs, names of files a
command writes (`tracesmith.sbt`, `trace.json`: no rule above covers them),
and the short explicit lists below (other projects' files; the device runs'
command files under build/runs/). Each missing path is printed as
`doc:line: path` and the exit status is 1; 0 when every path exists. Python 3
standard library only; needs no build; runs in well under a second.
"""

import argparse
import fnmatch
import os
import re
import sys
import time

ROOTS = ("src", "docs", "gpu", "scripts", "bench", "tests", "include", "python", "examples",
         "fuzz", ".ci")
# Extensions of the source files whose shorter names (rule 3) are checked.
SOURCE_EXTENSIONS = (".cc", ".h", ".cu", ".cuh", ".c", ".cpp", ".hpp", ".inc", ".py", ".sh",
                     ".cmake")
# Names the documents use that are not files of this repository: keep small.
ALLOWED = {
    "CLI/CLI.hpp",  # CLI11's header (src/cli/README.md)
    "Python.h",  # CPython's (docs/python.md)
    "cupti_pcsampling.h",  # CUPTI's (docs/pc-sampling.md)
    "cupti_sass_metrics.h",
}
# build/runs/vN.sh: the device runs' command files, cited after their
# build/runs/ path as `v21.sh` (build output, not in the tree).
ALLOWED_NAME_RE = re.compile(r"^v\d+\.sh$")
# Other projects' files, named in the stacks and reports the documents show.
ALLOWED_PREFIXES = ("torch/",)  # PyTorch's Python sources
# Sources a program named without extension is built from (rule above).
PROGRAM_SOURCES = (".cc", ".cu", ".c", ".py", ".sh")

ROOT_PATH_RE = re.compile(r"(?<![\w./~$-])((?:%s)/[\w./*{},<>+-]*)" %
                          "|".join(re.escape(r) for r in ROOTS))
LINK_RE = re.compile(r"\]\(([^)\s]+)\)")
SHORT_PATH_RE = re.compile(r"(?<![\w./~$-])((?:[\w+-]+/)+[\w+-]+(?:%s))(?![\w/])" %
                           "|".join(re.escape(e) for e in SOURCE_EXTENSIONS))
DOC_NAME_RE = re.compile(r"(?<![\w./~$-])([\w-]+\.md)\b")
URL_TAIL_RE = re.compile(r"[a-z]+://\S*$")  # the text before a path inside a URL
BARE_NAME_RE = re.compile(r"`([\w+-]+(?:%s))`" % "|".join(re.escape(e) for e in SOURCE_EXTENSIONS))


def documents(root):
    docs = ["README.md"]
    docs += sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(root, "docs"))
                   if f.endswith(".md"))
    for top in ("src", "include", "gpu", "examples", "python", "tests", "bench", "fuzz"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            if "README.md" in filenames:
                docs.append(os.path.relpath(os.path.join(dirpath, "README.md"), root))
    return docs


def tree_files(root):
    """Every file and folder of the tree (relative, '/'-separated), without build*/ and the
    hidden folders at the top (.git, caches) other than .ci/."""
    files, dirs = [], set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        rel = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        dirnames[:] = [d for d in dirnames
                       if not (rel == "" and (d.startswith("build") or
                                              (d.startswith(".") and d != ".ci")))]
        for d in dirnames:
            dirs.add(rel + d)
        for f in filenames:
            files.append(rel + f)
    return files, dirs


def expand_braces(path):
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    out = []
    for alt in m.group(1).split(","):
        out += expand_braces(path[:m.start()] + alt + path[m.end():])
    return out


def clean(path):
    path = path.split("#", 1)[0]
    path = re.sub(r":\d+(-\d+)?$", "", path)
    return path.rstrip(".,:;'\"")


class Tree:
    def __init__(self, root):
        self.root = root
        self.files, self.dirs = tree_files(root)
        self.file_set = set(self.files)
        self.by_name = {}
        for f in self.files:
            self.by_name.setdefault(f.rsplit("/", 1)[-1], []).append(f)

    def exists(self, path):
        path = path.rstrip("/")
        return path in self.file_set or path in self.dirs

    def glob(self, pattern):
        pattern = pattern.rstrip("/")
        return any(fnmatch.fnmatchcase(p, pattern) for p in self.files) or \
            any(fnmatch.fnmatchcase(d, pattern) for d in self.dirs)

    def ends_with(self, tail):
        name = tail.rsplit("/", 1)[-1]
        return any(f == tail or f.endswith("/" + tail) for f in self.by_name.get(name, ()))


def check_root_path(tree, path, doc_dir):
    """True when `path` (from the root or `doc_dir`) exists or is not checked."""
    return _check_path(tree, path) or (doc_dir and _check_path(tree, doc_dir + "/" + path))


def _check_path(tree, path):
    if path.endswith("/..."):
        path = path[:-4]
    elif path.endswith("..."):
        return True  # "src/cap..." style abbreviation: not a path
    if "<" in path or ">" in path:
        return True  # placeholder
    alternatives = expand_braces(path)
    for p in alternatives:
        if "*" in p or "?" in p:
            if not tree.glob(p):
                return False
        elif not tree.exists(p) and not any(tree.exists(p + e) for e in PROGRAM_SOURCES):
            return False
    return True


def check_document(tree, doc):
    """([(doc, line, path) of each missing path], how many names were checked)."""
    missing = []
    checked = 0
    with open(os.path.join(tree.root, doc), encoding="utf-8") as f:
        lines = f.read().splitlines()
    doc_dir = os.path.dirname(doc)
    for number, line in enumerate(lines, 1):
        seen = set()

        def report(path):  # `path` is missing
            if path in ALLOWED or path.startswith(ALLOWED_PREFIXES) or ALLOWED_NAME_RE.match(path):
                return
            if path not in seen:
                seen.add(path)
                missing.append((doc, number, path))

        spans = []
        for m in ROOT_PATH_RE.finditer(line):
            path = clean(m.group(1))
            spans.append(m.span(1))
            if "/" not in path.rstrip("/"):
                continue
            checked += 1
            if not check_root_path(tree, path, doc_dir):
                report(path)
        for m in LINK_RE.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target) or target.startswith(("#", "/")):
                continue
            target = clean(target)
            if not target:
                continue
            path = os.path.normpath(os.path.join(doc_dir, target)).replace(os.sep, "/")
            if path.startswith("build/") or path.startswith("../"):
                continue
            checked += 1
            if not tree.exists(path) and not (("*" in path) and tree.glob(path)):
                report(target)
        for m in SHORT_PATH_RE.finditer(line):
            if any(a <= m.start(1) < b for a, b in spans):
                continue
            path = m.group(1)
            if path.startswith("build/") or URL_TAIL_RE.search(line[:m.start(1)]):
                continue
            checked += 1
            if not tree.ends_with(path):
                report(path)
        for m in DOC_NAME_RE.finditer(line):
            if any(a <= m.start(1) < b for a, b in spans):
                continue
            name = m.group(1)
            checked += 1
            if not any(tree.exists(os.path.join(d, name).lstrip("/")) for d in (doc_dir, "docs", "")):
                report(name)
        for m in BARE_NAME_RE.finditer(line):
            checked += 1
            if not tree.ends_with(m.group(1)):
                report(m.group(1))
    return missing, checked


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", help="the repository (default: this script's)",
                        default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    args = parser.parse_args()
    start = time.monotonic()
    tree = Tree(os.path.abspath(args.root))
    docs = documents(tree.root)
    missing, checked = [], 0
    for doc in docs:
        doc_missing, doc_checked = check_document(tree, doc)
        missing += doc_missing
        checked += doc_checked
    for doc, number, path in missing:
        print(f"{doc}:{number}: {path}: no such file or folder in the repository")
    elapsed = time.monotonic() - start
    if missing:
        print(f"check-doc-paths: {len(missing)} missing paths in {len(docs)} documents "
              "(rename them to the file that exists, or remove the claim)")
        return 1
    print(f"check-doc-paths: {checked} paths named in {len(docs)} documents, all exist "
          f"({elapsed:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
