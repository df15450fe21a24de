"""What a stranger's clone must hold: a README one reads (at most 15 000 bytes, no paragraph over
900 characters, every link to docs/ resolving), docs without the project's own history, and test
data carried in tests/data (under 40 MB, each folder's README readable where it is, no test
reading ../shared)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import datafiles
from conftest import DATA, ROOT

DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def paragraphs(text):
    """Blocks between blank lines, code fences and table rows left out, each list item apart."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    for block in re.split(r"\n\s*\n", text):
        lines = [l for l in block.splitlines() if l.strip() and not l.lstrip().startswith("|")]
        item = []
        for line in lines:
            if re.match(r"\s*([-*]|\d+\.)\s", line) and item:
                yield " ".join(item)
                item = []
            item.append(line.strip())
        if item:
            yield " ".join(item)


def test_paragraphs_are_cut_as_a_reader_sees_them():
    text = "a\nb\n\n- one\n- two\n  more\n\n```\nx\n\ny\n```\n| t | u |\n"
    assert list(paragraphs(text)) == ["a b", "- one", "- two more"]


def test_readme_is_short_and_no_paragraph_is_long():
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) <= 15000
    for page in DOCS:                   # docs/ too: a page one reads
        longest = max(paragraphs(page.read_text()), key=len)
        assert len(longest) <= 900, (page.name, longest[:200])


def test_every_relative_link_resolves():
    for page in DOCS:
        text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
        for url in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", url):
                continue
            path, _, anchor = url.partition("#")
            target = (page.parent / path).resolve() if path else page
            assert target.exists(), (page.name, url)
            if anchor and target.suffix == ".md":
                heads = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                         for h in re.findall(r"^#+\s+(.*)$", target.read_text(), flags=re.M)}
                assert anchor in heads, (page.name, url)


HISTORY = re.compile(r"\bissue \d+|\brun \d+\b|\bsince run\b|\b(first|second|third|fourth|fifth) "
                     r"(session|run of ours)\b|\b(this|last|previous) session\b|\bexactly as before\b",
                     re.I)


def test_docs_tell_no_project_history():
    for page in DOCS:
        for n, line in enumerate(page.read_text().splitlines(), 1):
            assert not HISTORY.search(line), "%s:%d: %s" % (page.name, n, line)


def test_test_data_is_carried_and_small():
    unpacked = set(datafiles.packed())
    size = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file() and p not in unpacked
               and "__pycache__" not in p.parts)
    assert size < 40e6, size


def test_each_data_folder_has_a_readme_one_can_read_there():
    assert not list(DATA.rglob("README*.xz"))
    assert not [p for p in datafiles.packed() if p.name.startswith("README")]
    for folder in ("names", "precookie", "vdso", "real/captures", "real/external", "real/repro"):
        assert (DATA / folder / "README.md").is_file(), folder
    for folder in ("names", "precookie", "real/captures", "real/external"):     # made by perf
        assert re.search(r"perf [3-7]\.\d+", (DATA / folder / "README.md").read_text()), folder


SHARED = re.compile(r"""["']\.\./shared|["']\.\.["']\s*/\s*["']shared["']|/\s*["']shared["']\s*/""")


def test_no_test_reads_the_rig_beside_the_repository():
    code = [p for d in ("tests", "fuzz", "bench") for p in (ROOT / d).rglob("*.py")]
    code += [ROOT / "Makefile"] + [p for p in (ROOT / "tools").iterdir() if p.is_file()]
    for path in code:
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if path.name != "test_repository.py":
                assert not SHARED.search(line), "%s:%d: %s" % (path.relative_to(ROOT), n, line)


def test_need_venv_says_which_package_to_install():
    """Debian's python3 without python3-venv cannot import ensurepip: make stops with the package
    to install (the message a non-root user gets; root installs python3-venv instead)."""
    where = Path(tempfile.mkdtemp(prefix="need-venv-"))        # readable by another user
    try:
        where.chmod(0o755)
        fake = where / "python3"
        fake.write_text('#!/bin/sh\ncase "$*" in *ensurepip*) exit 1;; esac\nexec %s "$@"\n' % sys.executable)
        fake.chmod(0o755)
        as_user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
        tool = str(shutil.copy(ROOT / "tools" / "need-venv", where))     # a clone in /root is root's
        p = subprocess.run(as_user + [tool, str(fake)], capture_output=True, text=True, cwd=where)
        assert p.returncode == 1 and p.stdout == "", p.stderr
        assert p.stderr == ("make: %s cannot create a virtual environment: install python3-venv "
                            "(apt-get install python3-venv) and run make again\n" % fake)
        good = "/usr/bin/python3" if as_user else sys.executable     # root's own may be out of reach
        p = subprocess.run(as_user + [tool, good], capture_output=True, text=True, cwd=where)
        assert p.returncode == 0 and p.stderr == "", p.stderr
    finally:
        shutil.rmtree(where)
