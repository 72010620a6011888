"""Shared machinery for the benchmark builders: pinned raw files, checksums, local mirrors and cache keys.

Every builder in this package derives from :class:`LexicalBenchmarkBuilder`, an ordinary
``datasets.GeneratorBasedBuilder`` that is called directly (``datasets`` >= 4 no longer runs loading scripts)::

    builder = Scan(config_name="addprim_jump", cache_dir=...)
    builder.download_and_prepare()
    dataset_dict = builder.as_dataset()

Raw files
    Each remote file is a :class:`RemoteFile`: a raw URL pinned to an upstream commit, the path the file has in a
    local mirror, and its sha256 (or, where only that is known, its git blob id). A file is read from the mirror
    (``data_dir=`` or the ``LEXICAL_HF_DATA_DIR`` environment variable) when it is there, otherwise downloaded
    (``urllib``) into ``<cache_dir>/downloads/lexical_hf/<checksum>/``. Either way it is verified before use; a wrong
    or truncated file raises :class:`ChecksumMismatchError` naming the file, and is never used.

Cache key
    ``datasets`` caches a prepared dataset under ``<cache_dir>/<dataset_name>/<config_id>/<version>/<hash>``. Two
    traps are avoided here: each builder passes its own ``dataset_name`` (builders never share a cache folder), and
    ``hash`` is computed from the builder's source code plus, for every raw file the build will read, its checksum
    (of the actual bytes of a mirror file; the pinned one for a file still to be downloaded) and the checksum it
    must match. A changed raw file therefore gets a fresh cache folder, where it is verified again, instead of a
    stale cached dataset.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import random
import shutil
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import datasets

from ..files import sha256_of_file

DATA_DIR_ENV = "LEXICAL_HF_DATA_DIR"
"""Environment variable naming a local mirror of the raw benchmark files (used when ``data_dir`` is not given)."""

VALIDATION = "validation"


class ChecksumMismatchError(ValueError):
    """A raw data file does not have the bytes it should have (wrong version, corrupted or truncated)."""


class MissingDataFileError(FileNotFoundError):
    """A raw data file is neither in the local mirror nor downloadable."""


@dataclass(frozen=True)
class RemoteFile:
    """One raw file of a benchmark, pinned to an upstream commit.

    Attributes:
        mirror_path: path relative to a mirror root, e.g. ``"COGS/train.tsv"``.
        url: raw download URL that contains the upstream commit hash (so its content never changes).
        sha256: hex sha256 of the file, when known.
        git_blob: git blob id (``git hash-object``) of the file; used to verify when no sha256 is known.
        num_bytes: expected size in bytes, when known (only used to say "truncated" in error messages).
    """

    mirror_path: str
    url: str
    sha256: str | None = None
    git_blob: str | None = None
    num_bytes: int | None = None

    def __post_init__(self):
        if not (self.sha256 or self.git_blob):
            raise ValueError(f"RemoteFile {self.mirror_path}: give a sha256 or a git blob id")

    @property
    def pinned_digest(self) -> str:
        """The checksum the file is verified against, as ``"sha256:<hex>"`` or ``"git-blob:<hex>"``."""
        return f"sha256:{self.sha256}" if self.sha256 else f"git-blob:{self.git_blob}"


def git_blob_id_of_file(path: str | os.PathLike) -> str:
    """Git blob id of a file (what ``git hash-object`` prints): sha1 of ``b"blob <size>\\0"`` + the bytes."""
    size = os.path.getsize(path)
    digest = hashlib.sha1(f"blob {size}\0".encode())
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def resolve_data_dir(data_dir: str | os.PathLike | None) -> Path | None:
    """The local mirror to read raw files from: ``data_dir`` if given, else ``$LEXICAL_HF_DATA_DIR``, else None."""
    if data_dir is None:
        data_dir = os.environ.get(DATA_DIR_ENV) or None
    if data_dir is None:
        return None
    path = Path(data_dir).expanduser()
    if not path.is_dir():
        raise MissingDataFileError(f"mirror directory {path} does not exist (from data_dir= or ${DATA_DIR_ENV})")
    return path


def verify_file(path: str | os.PathLike, remote: RemoteFile, expected_sha256: str | None = None) -> None:
    """Raise :class:`ChecksumMismatchError` unless ``path`` has the pinned bytes of ``remote``.

    Args:
        path: the local file to check.
        remote: the pinned description of the file.
        expected_sha256: a sha256 to check against instead of the pinned checksum (a file you produced yourself,
            see ``checksum_overrides`` of the builders).
    """
    if expected_sha256 is not None:
        kind, expected, actual = "sha256 (override)", expected_sha256.lower(), sha256_of_file(path)
    elif remote.sha256:
        kind, expected, actual = "sha256", remote.sha256, sha256_of_file(path)
    else:
        kind, expected, actual = "git blob id", remote.git_blob, git_blob_id_of_file(path)
    if actual == expected:
        return
    size = os.path.getsize(path)
    size_note = f"it has {size} bytes"
    if remote.num_bytes is not None and expected_sha256 is None:
        size_note += f", {remote.num_bytes} expected"
        if size < remote.num_bytes:
            size_note += " (truncated?)"
    raise ChecksumMismatchError(
        f"{remote.mirror_path}: the file {path} has {kind} {actual} but {expected} was expected; {size_note}. "
        f"It is not used. Replace it with the file from {remote.url}"
    )


@dataclass
class LexicalBenchmarkConfig(datasets.BuilderConfig):
    """A benchmark config plus the options of one load.

    Attributes:
        splits: which splits to build (None: the config's default splits).
        validation_fraction: if set, carve a ``validation`` split of ``floor(fraction * len(train))`` examples out of
            train, chosen with ``random.Random(seed)`` (the paper's protocol for SCAN uses 0.01).
        seed: seed of that carve-out.
    """

    splits: tuple[str, ...] | None = None
    validation_fraction: float | None = None
    seed: int = 0


class LexicalBenchmarkBuilder(datasets.GeneratorBasedBuilder):
    """Base class of the benchmark builders: split selection, raw-file fetching and verification, cache key.

    Subclasses define ``DATASET_NAME``, ``BUILDER_CONFIGS`` and implement :meth:`splits_of`, :meth:`raw_files_for`
    and :meth:`build_splits`. All examples are built in ``_split_generators`` (the data are small), so errors about
    raw files surface as themselves rather than wrapped in a generation error.

    Args (beyond those of ``datasets.GeneratorBasedBuilder``):
        config_name: the benchmark config.
        data_dir: local mirror root (default: ``$LEXICAL_HF_DATA_DIR``; None: download).
        splits: splits to build (default: the config's default splits).
        validation_fraction, seed: see :class:`LexicalBenchmarkConfig`.
        checksum_overrides: ``{mirror_path: sha256}`` for files you produced yourself (e.g. a stand-in for a file
            you cannot download); such a file is verified against the given sha256 instead of the pinned one.
        allow_download: if False, a raw file missing from the mirror is an error instead of a download.
    """

    BUILDER_CONFIG_CLASS = LexicalBenchmarkConfig
    DATASET_NAME: str = ""
    VERSION = datasets.Version("1.0.0")

    # ----- to be provided by subclasses -------------------------------------------------------------------------
    @classmethod
    def splits_of(cls, config_name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(available_splits, default_splits)`` of a config, in output order."""
        raise NotImplementedError

    @classmethod
    def raw_files_for(cls, config_name: str, splits: tuple[str, ...]) -> dict[str, RemoteFile]:
        """The raw files needed to build ``splits`` of a config, by a key the subclass chooses."""
        return {}

    def build_splits(self, paths: dict[str, Path], splits: tuple[str, ...]) -> dict[str, list[dict]]:
        """Build the examples of each requested split from verified local raw files."""
        raise NotImplementedError

    # ----- machinery ---------------------------------------------------------------------------------------------
    def __init__(
        self,
        config_name: str | None = None,
        *,
        data_dir: str | os.PathLike | None = None,
        splits: Iterable[str] | None = None,
        validation_fraction: float | None = None,
        seed: int = 0,
        checksum_overrides: Mapping[str, str] | None = None,
        allow_download: bool = True,
        **kwargs,
    ):
        known = {config.name: config for config in self.BUILDER_CONFIGS}
        config_name = config_name or self.DEFAULT_CONFIG_NAME
        if config_name is None:
            raise ValueError(f"{self.DATASET_NAME}: choose a config, one of {sorted(known)}")
        if config_name not in known:
            raise ValueError(f"{self.DATASET_NAME}: unknown config {config_name!r}; available: {sorted(known)}")
        available, default = self.splits_of(config_name)
        splits = tuple(default if splits is None else splits)
        unknown = [split for split in splits if split not in available]
        if unknown or not splits:
            raise ValueError(
                f"{self.DATASET_NAME}/{config_name}: unknown or no splits {unknown or list(splits)}; "
                f"available: {list(available)}"
            )
        splits = tuple(split for split in available if split in splits)  # canonical order, no duplicates
        if validation_fraction is not None:
            if not 0 < validation_fraction < 1:
                raise ValueError(f"validation_fraction must be in (0, 1), got {validation_fraction}")
            if VALIDATION in available:
                raise ValueError(
                    f"{self.DATASET_NAME}/{config_name} already has a '{VALIDATION}' split; "
                    "validation_fraction is only for benchmarks without one"
                )
            if "train" not in splits:
                raise ValueError("validation_fraction needs the 'train' split")

        self.mirror_dir = resolve_data_dir(data_dir)
        self.allow_download = allow_download
        self.checksum_overrides = {path: sha.lower() for path, sha in (checksum_overrides or {}).items()}
        self.raw_files = self.raw_files_for(config_name, splits)
        known_paths = {remote.mirror_path for remote in self.raw_files.values()}
        stray = sorted(set(self.checksum_overrides) - known_paths)
        if stray:
            raise ValueError(f"checksum_overrides names files this load does not read: {stray}; "
                             f"it reads {sorted(known_paths)}")
        kwargs.setdefault("dataset_name", self.DATASET_NAME)
        kwargs.setdefault("hash", self._cache_key(config_name))
        super().__init__(
            config_name=config_name,
            splits=splits,
            validation_fraction=validation_fraction,
            seed=seed,
            **kwargs,
        )

    @classmethod
    def cache_key_extras(cls, config_name: str) -> dict[str, str]:
        """What else the built examples of `config_name` depend on besides the code and the raw files, e.g. the
        versions of the tokenizers a config runs (the `eng_cmn` raw recipe). Part of the cache key."""
        return {}

    def _cache_key(self, config_name: str) -> str:
        """Hash of the builder code, of the checksum of every raw file this build reads (see module doc) and of
        `cache_key_extras`."""
        digest = hashlib.sha256()
        for cls in type(self).__mro__:
            if cls.__module__.startswith(__package__):
                digest.update(inspect.getsource(inspect.getmodule(cls)).encode())
        digest.update(json.dumps(self.cache_key_extras(config_name), sort_keys=True).encode())
        for key, remote in sorted(self.raw_files.items()):
            override = self.checksum_overrides.get(remote.mirror_path)
            expected = f"sha256:{override}" if override else remote.pinned_digest
            local = self.mirror_dir / remote.mirror_path if self.mirror_dir else None
            if local is not None and local.is_file():
                actual = "sha256:" + sha256_of_file(local)  # the bytes that will actually be read
            else:
                actual = expected  # a download is verified against `expected` before use
            # `expected` is in the key too: a dataset built from a stand-in accepted by an override must not be
            # served later to a load without that override (which would reject the file).
            digest.update(f"{key}={actual};expected={expected};".encode())
        return digest.hexdigest()[:16]

    def _split_generators(self, dl_manager):
        # Downloads go through fetch_raw_file (urllib) rather than dl_manager: datasets' HTTP filesystem needs
        # aiohttp, which `datasets` does not install.
        # the builder's downloads folder, read from download_config (public, unlike the builder's attribute for it)
        downloads = dl_manager.download_config.cache_dir or datasets.config.DOWNLOADED_DATASETS_PATH
        download_dir = Path(downloads).expanduser() / "lexical_hf"
        paths = {}
        for key, remote in self.raw_files.items():
            try:
                paths[key] = fetch_raw_file(
                    remote,
                    mirror_dir=self.mirror_dir,
                    download_dir=download_dir,
                    allow_download=self.allow_download,
                    expected_sha256=self.checksum_overrides.get(remote.mirror_path),
                )
            except MissingDataFileError as error:
                # e.g. COGS gen.tsv missing: the other default splits can still be built without it
                without = [split for split in self.config.splits
                           if key not in self.raw_files_for(self.config.name, [split])]
                if without:
                    raise MissingDataFileError(
                        f"{error} Or build only the splits that do not need this file: splits={without} "
                        f"(examples/run_lexical.py: --benchmark_splits {','.join(without)})."
                    ) from error
                raise
        examples = self.build_splits(paths, self.config.splits)
        empty = [split for split, rows in examples.items() if not rows]
        if empty:  # e.g. an empty stand-in accepted by a checksum override; datasets would only say "no data"
            files = sorted(str(path) for path in paths.values())
            raise ValueError(f"{self.DATASET_NAME}: split(s) {empty} have no examples (read from {files})")
        if self.config.validation_fraction is not None:
            examples = carve_validation(examples, self.config.validation_fraction, self.config.seed)
        self._examples = examples
        return [datasets.SplitGenerator(name=name, gen_kwargs={"split": name}) for name in examples]

    def _generate_examples(self, split):
        yield from enumerate(self._examples[split])


def fetch_raw_file(
    remote: RemoteFile,
    *,
    mirror_dir: Path | None,
    download_dir: Path,
    allow_download: bool = True,
    expected_sha256: str | None = None,
) -> Path:
    """Local path of a verified raw file: from the mirror if it is there, else downloaded (when allowed).

    A download lands in ``download_dir/<checksum>/<file name>`` only after it has been verified, so a bad
    download is never cached; a cached download is reused (its name is its checksum).

    Raises:
        ChecksumMismatchError: the mirror file or the download has the wrong bytes.
        MissingDataFileError: the file is not in the mirror and cannot be downloaded (or downloads are off,
            or ``HF_HUB_OFFLINE``/``HF_DATASETS_OFFLINE`` is set).
    """
    mirror_note = ""
    if mirror_dir is not None:
        local = Path(mirror_dir) / remote.mirror_path
        if local.is_file():
            verify_file(local, remote, expected_sha256)
            return local
        mirror_note = f"{remote.mirror_path} is not in the mirror {mirror_dir} (looked for {local}); "
    how_to_fix = (
        f"Get it from {remote.url} ({remote.pinned_digest}), put it at <mirror>/{remote.mirror_path} and pass "
        f"data_dir=<mirror> or set ${DATA_DIR_ENV}."
    )
    digest = expected_sha256 or remote.sha256 or remote.git_blob
    target = Path(download_dir) / digest / Path(remote.mirror_path).name
    if target.is_file():
        # downloaded and verified by an earlier load: reading it is not a download, so offline mode and
        # allow_download=False may use it (as datasets and huggingface_hub serve their caches offline)
        verify_file(target, remote, expected_sha256)
        return target
    if not allow_download:
        raise MissingDataFileError(
            f"{mirror_note or remote.mirror_path + ': no mirror given and '}downloads are disabled "
            f"(allow_download=False). {how_to_fix}"
        )
    if datasets.config.HF_HUB_OFFLINE:
        raise MissingDataFileError(f"{mirror_note}offline mode is on (HF_HUB_OFFLINE). {how_to_fix}")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + f".{os.getpid()}.incomplete")
    try:
        with urllib.request.urlopen(remote.url, timeout=60) as response, open(partial, "wb") as out:
            shutil.copyfileobj(response, out)
    except (OSError, ValueError) as error:  # URLError, HTTPError and socket errors are OSErrors
        partial.unlink(missing_ok=True)
        raise MissingDataFileError(
            f"{mirror_note}could not download {remote.url} ({type(error).__name__}: {error}). {how_to_fix}"
        ) from error
    try:
        verify_file(partial, remote, expected_sha256)
    except ChecksumMismatchError as error:
        partial.unlink(missing_ok=True)
        raise ChecksumMismatchError(f"download from {remote.url} rejected: {error}") from None
    os.replace(partial, target)
    return target


def carve_validation(examples: dict[str, list[dict]], fraction: float, seed: int) -> dict[str, list[dict]]:
    """Move ``floor(fraction * len(train))`` seeded-random train examples into a new ``validation`` split.

    This is the paper's protocol for SCAN (``math.floor(len(train) * 0.01)`` examples held out of train). The
    remaining train examples keep their order; validation examples are in train order too.
    """
    train = examples["train"]
    size = int(fraction * len(train))
    if size < 1:
        raise ValueError(f"validation_fraction={fraction} of {len(train)} train examples is an empty split")
    held_out = set(random.Random(seed).sample(range(len(train)), size))
    result = {}
    for name, split_examples in examples.items():
        if name == "train":
            result["train"] = [example for index, example in enumerate(train) if index not in held_out]
            result[VALIDATION] = [example for index, example in enumerate(train) if index in held_out]
        else:
            result[name] = split_examples
    return result


def read_tsv(path: Path, num_fields: int, mirror_path: str) -> list[list[str]]:
    """Read a UTF-8 tab-separated file with exactly ``num_fields`` fields per line (error names file and line)."""
    rows = []
    with open(path, encoding="utf-8", newline="\n") as handle:
        for line_number, line in enumerate(handle, start=1):
            line = line.rstrip("\n").rstrip("\r")
            if not line:
                continue
            fields = line.split("\t")
            if len(fields) != num_fields:
                raise ValueError(
                    f"{mirror_path} ({path}) line {line_number}: expected {num_fields} tab-separated fields, "
                    f"found {len(fields)}: {line[:80]!r}"
                )
            rows.append(fields)
    return rows


def normalize_whitespace(text: str) -> str:
    """Collapse runs of whitespace to one space and strip the ends (what a whitespace tokenizer sees)."""
    return " ".join(text.split())
