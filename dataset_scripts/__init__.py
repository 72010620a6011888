"""``datasets`` builders for the benchmarks of Akyürek & Andreas (ACL 2021), plus ``publish`` (Parquet + card).

One ``datasets.GeneratorBasedBuilder`` per benchmark, called directly (``datasets`` >= 4 runs no loading scripts);
most users want :func:`lexical_hf.benchmarks.load_benchmark` instead.
"""

from ._common import (
    DATA_DIR_ENV,
    ChecksumMismatchError,
    LexicalBenchmarkBuilder,
    MissingDataFileError,
    RemoteFile,
    git_blob_id_of_file,
    sha256_of_file,
)

__all__ = [
    "DATA_DIR_ENV",
    "ChecksumMismatchError",
    "LexicalBenchmarkBuilder",
    "MissingDataFileError",
    "RemoteFile",
    "git_blob_id_of_file",
    "sha256_of_file",
]
