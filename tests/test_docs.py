"""The documents that the code, its help texts and the docs point a user to exist."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NAMED = re.compile(r"\b(?:docs|results)/[A-Za-z0-9_./-]+\.md\b")


def test_every_document_the_code_and_the_docs_name_exists():
    sources = [*REPO.glob("lexical_hf/**/*.py"), *REPO.glob("examples/*.py"), *REPO.glob("benchmarks/*"),
               REPO / "Makefile", REPO / "README.md", *REPO.glob("docs/*.md")]
    named = {(path.relative_to(REPO).as_posix(), name) for path in sources if path.is_file()
             for name in NAMED.findall(path.read_text(encoding="utf-8", errors="replace"))}
    assert len(named) > 10  # the pattern finds what it should
    missing = sorted((source, name) for source, name in named if not (REPO / name).exists())
    assert not missing, missing
