"""The paper's benchmarks as ``datasets`` builders, and your own pairs files.

Every loader returns an ordinary ``datasets.DatasetDict`` (or ``Dataset``) with at least the string columns ``source``
and ``target`` (whitespace-tokenized). Loaders know nothing about models.

* :func:`load_benchmark` / :func:`list_benchmarks`: Colors (embedded), SCAN (generated from its grammar), COGS and
  English–Chinese (raw files pinned to upstream commits, verified by checksum, read from a local mirror or
  downloaded). One ``datasets.GeneratorBasedBuilder`` per benchmark (``colors.py``, ``scan.py``, ``cogs.py``,
  ``eng_cmn.py``) on the shared machinery of ``_common.py``.
* :func:`load_pairs_file`: a TSV, ``IN: … OUT: …`` or JSON-lines file of your own.
"""

from ._common import DATA_DIR_ENV, ChecksumMismatchError, MissingDataFileError, RemoteFile
from .loading import builder_class, canonical_benchmark_name, config_fields, list_benchmarks, load_benchmark
from .pairs_files import load_pairs_file, read_pairs_file

__all__ = [
    "DATA_DIR_ENV",
    "ChecksumMismatchError",
    "MissingDataFileError",
    "RemoteFile",
    "builder_class",
    "canonical_benchmark_name",
    "config_fields",
    "list_benchmarks",
    "load_benchmark",
    "load_pairs_file",
    "read_pairs_file",
]
