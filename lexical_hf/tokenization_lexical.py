"""Word-level tokenizer with separate source and target vocabularies (V_x and V_y, as in the paper).

The lexicon L is a |V_x|×|V_y| matrix, so the two vocabularies are first-class here: ``source_vocab`` and
``target_vocab`` are plain ``dict[str, int]`` and both start with the same four special tokens at the same ids::

    <pad> = 0, <s> = 1, </s> = 2, <unk> = 3

Encoding follows the transformers conventions: ``tok(sources, text_target=targets)`` gives ``input_ids``,
``attention_mask`` and ``labels``; every encoded sequence ends in ``</s>``. The decoder starts from ``<s>``, which
(like ``<pad>``) is never generated. ``decode``/``batch_decode`` read *target* ids, because what gets decoded is what
the model generated; ``decode_source`` reads source ids.

Each vocabulary is a ``tokenizers.Tokenizer`` (WordLevel model, whitespace pre-tokenizer, ``$A </s>`` template) so
that batches are encoded in Rust; they are saved as ``source_tokenizer.json`` and ``target_tokenizer.json``.
Words outside a vocabulary become ``<unk>``; they are counted in ``unknown_token_counts`` and logged, never fatal.
What is encoded must be strings (or lists of word strings), and a text may not contain a special token: a literal
``</s>`` in a target would teach the model to stop there, so it is an error naming the text, not a silent label.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
from collections.abc import Iterable, Sequence

from tokenizers import Tokenizer, pre_tokenizers, processors
from tokenizers.models import WordLevel
from transformers.tokenization_utils_base import BatchEncoding, PreTrainedTokenizerBase, TruncationStrategy
from transformers.utils import PaddingStrategy, TensorType, logging

logger = logging.get_logger(__name__)

SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>")
PAD_ID, BOS_ID, EOS_ID, UNK_ID = range(4)
# what each special token is for, and an ordinary word a text can use instead
SPECIAL_TOKEN_ROLES = {
    "<pad>": ("the padding the tokenizer adds and the model masks out", "PAD"),
    "<s>": ("the decoder's start token, which the model never generates", "BOS"),
    "</s>": ("the end of sequence the tokenizer adds after every text: one inside a text ends it there", "EOS"),
    "<unk>": ("what words outside the vocabulary become", "UNK"),
}

VOCAB_FILES_NAMES = {
    "source_tokenizer_file": "source_tokenizer.json",
    "target_tokenizer_file": "target_tokenizer.json",
}


def build_word_level_tokenizer(vocab: dict[str, int], prepend_bos: bool = False) -> Tokenizer:
    """A `tokenizers.Tokenizer` that splits on whitespace, maps words through `vocab` and appends ``</s>`` (and, with
    `prepend_bos`, prepends ``<s>``)."""
    for token, expected_id in zip(SPECIAL_TOKENS, range(4)):
        if vocab.get(token) != expected_id:
            raise ValueError(f"vocabulary must map {token!r} to id {expected_id}, found {vocab.get(token)!r}")
    if sorted(vocab.values()) != list(range(len(vocab))):
        raise ValueError("vocabulary ids must be exactly 0..len(vocab)-1")
    tokenizer = Tokenizer(WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    template, specials = ("<s> $A </s>", [("<s>", BOS_ID), ("</s>", EOS_ID)]) if prepend_bos else ("$A </s>", [("</s>", EOS_ID)])
    tokenizer.post_processor = processors.TemplateProcessing(single=template, special_tokens=specials)
    tokenizer.add_special_tokens(list(SPECIAL_TOKENS))
    return tokenizer


def vocab_from_texts(texts: Iterable[str], min_frequency: int = 1) -> dict[str, int]:
    """Specials first, then words by descending frequency (ties alphabetically) so ids are deterministic."""
    counts = collections.Counter(word for text in texts for word in text.split())
    for special in SPECIAL_TOKENS:
        counts.pop(special, None)
    words = sorted((w for w, c in counts.items() if c >= min_frequency), key=lambda w: (-counts[w], w))
    return {token: index for index, token in enumerate((*SPECIAL_TOKENS, *words))}


class LexicalTokenizer(PreTrainedTokenizerBase):
    """Word-level tokenizer with a source vocabulary V_x and a target vocabulary V_y.

    Args:
        source_tokenizer_file (`str`, *optional*): path of a saved source `tokenizers` JSON.
        target_tokenizer_file (`str`, *optional*): path of a saved target `tokenizers` JSON.
        source_vocab (`dict[str, int]`, *optional*): source vocabulary, used when no file is given.
        target_vocab (`dict[str, int]`, *optional*): target vocabulary, used when no file is given.
        source_bos (`bool`, *optional*, defaults to `False`): encode sources as ``<s> x_1 … x_n </s>`` instead of
            ``x_1 … x_n </s>`` (the paper's code). The lexicon maps ``<s>`` to ``<unk>``, which a model whose
            lexicon was set with this tokenizer never generates: ``<s>`` is a position the attention can rest on
            without writing anything. A saved source tokenizer file carries its own template; passing a different
            `source_bos` with it is an error.

    The special tokens are fixed (``<pad>``, ``<s>``, ``</s>``, ``<unk>`` at ids 0–3 on both sides) because the
    model's config, the lexicon matrix and the decoding loop all rely on them lining up.
    """

    vocab_files_names = VOCAB_FILES_NAMES
    model_input_names = ["input_ids", "attention_mask"]

    def __init__(
        self,
        source_tokenizer_file: str | None = None,
        target_tokenizer_file: str | None = None,
        source_vocab: dict[str, int] | None = None,
        target_vocab: dict[str, int] | None = None,
        source_bos: bool | None = None,
        **kwargs,
    ):
        self._source = self._load_side("source", source_tokenizer_file, source_vocab, prepend_bos=bool(source_bos))
        self._target = self._load_side("target", target_tokenizer_file, target_vocab)
        if source_bos is not None and source_bos != self.source_bos:
            raise ValueError(f"source_bos={source_bos} but the source tokenizer file {'does' if self.source_bos else 'does not'} "
                             "prepend <s>: the file's template decides, leave source_bos unset when loading")
        self._active = self._source
        self.unknown_token_counts: dict[str, collections.Counter] = {
            "source": collections.Counter(),
            "target": collections.Counter(),
        }
        for name, token in zip(("pad_token", "bos_token", "eos_token", "unk_token"), SPECIAL_TOKENS):
            if kwargs.setdefault(name, token) != token:
                raise ValueError(f"{name} must be {token!r} for LexicalTokenizer, got {kwargs[name]!r}")
        super().__init__(**kwargs)

    @staticmethod
    def _load_side(side: str, path: str | None, vocab: dict[str, int] | None, prepend_bos: bool = False) -> Tokenizer:
        if path is not None:
            try:
                tokenizer = Tokenizer.from_file(path)
            except Exception as error:  # tokenizers raises a bare Exception that names neither the file nor the side
                # (a ValueError: from_pretrained replaces an OSError's message with a generic one)
                raise ValueError(f"{path}: not a readable {side} tokenizer file ({error}); save the tokenizer again "
                                 "with save_pretrained") from error
            try:
                build_word_level_tokenizer(tokenizer.get_vocab(with_added_tokens=True))  # validates the specials
            except ValueError as error:
                raise ValueError(f"{path}: {error}") from error
            return tokenizer
        if vocab is None:
            raise ValueError(
                f"LexicalTokenizer needs a {side} vocabulary: pass {side}_vocab= or {side}_tokenizer_file= (a folder "
                f"saved with save_pretrained holds {VOCAB_FILES_NAMES[side + '_tokenizer_file']}; is it missing?)"
            )
        return build_word_level_tokenizer(dict(vocab), prepend_bos=prepend_bos)

    @property
    def source_bos(self) -> bool:
        """Whether sources are encoded as ``<s> x_1 … x_n </s>`` (see the class docstring)."""
        return self._source.encode("", add_special_tokens=True).ids[:1] == [BOS_ID]

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_texts(
        cls, sources: Iterable[str], targets: Iterable[str], min_frequency: int = 1, **kwargs
    ) -> "LexicalTokenizer":
        """Build V_x from `sources` and V_y from `targets` (whitespace-tokenized strings)."""
        return cls(
            source_vocab=vocab_from_texts(sources, min_frequency),
            target_vocab=vocab_from_texts(targets, min_frequency),
            **kwargs,
        )

    @classmethod
    def from_dataset(
        cls, dataset, source_column: str = "source", target_column: str = "target", min_frequency: int = 1, **kwargs
    ) -> "LexicalTokenizer":
        """Build both vocabularies from a `datasets.Dataset` split (usually train) with text columns."""
        missing = [c for c in (source_column, target_column) if c not in dataset.column_names]
        if missing:
            raise ValueError(f"dataset has no column(s) {missing}; its columns are {dataset.column_names}")
        if len(dataset) == 0:
            raise ValueError("cannot build vocabularies from an empty dataset")
        return cls.from_texts(dataset[source_column], dataset[target_column], min_frequency=min_frequency, **kwargs)

    # ------------------------------------------------------------------ vocabularies
    @property
    def source_vocab(self) -> dict[str, int]:
        return self._source.get_vocab(with_added_tokens=True)

    @property
    def target_vocab(self) -> dict[str, int]:
        return self._target.get_vocab(with_added_tokens=True)

    @property
    def source_vocab_size(self) -> int:
        return self._source.get_vocab_size(with_added_tokens=True)

    @property
    def target_vocab_size(self) -> int:
        return self._target.get_vocab_size(with_added_tokens=True)

    @property
    def vocabulary_sha256(self) -> str:
        """A fingerprint of the two vocabularies (every token string at its id, source then target).

        A model whose L was indexed by this tokenizer records it (``config.vocabulary_sha256``), so that a tokenizer
        with the same sizes but other ids (e.g. rebuilt from other data) is caught instead of silently permuting L
        and the embeddings."""
        sides = [sorted(vocab.items(), key=lambda item: item[1]) for vocab in (self.source_vocab, self.target_vocab)]
        return hashlib.sha256(json.dumps(sides, ensure_ascii=False).encode("utf-8")).hexdigest()

    @property
    def non_generatable_target_ids(self) -> list[int]:
        """Target ids the decoder may never emit: padding and the decoder-start token."""
        return [PAD_ID, BOS_ID]

    @property
    def vocab_size(self) -> int:
        """Size of the active vocabulary (source, or target inside ``text_target`` encoding)."""
        return self._active.get_vocab_size(with_added_tokens=True)

    def __len__(self) -> int:
        return self.vocab_size

    def get_vocab(self) -> dict[str, int]:
        return self._active.get_vocab(with_added_tokens=True)

    @property
    def added_tokens_decoder(self) -> dict:
        return {}

    def _add_tokens(self, new_tokens, special_tokens: bool = False) -> int:
        if all(str(t) in self.get_vocab() for t in new_tokens):
            return 0
        raise NotImplementedError(
            "LexicalTokenizer vocabularies are fixed once built (the lexicon matrix is indexed by them); "
            "rebuild the tokenizer with LexicalTokenizer.from_texts/from_dataset instead of adding tokens"
        )

    def _switch_to_input_mode(self):
        self._active = self._source

    def _switch_to_target_mode(self):
        self._active = self._target

    def _side_name(self) -> str:
        return "target" if self._active is self._target else "source"

    # ------------------------------------------------------------------ encoding
    def tokenize(self, text: str, pair: str | None = None, add_special_tokens: bool = False, **kwargs) -> list[str]:
        return text.split()

    def num_special_tokens_to_add(self, pair: bool = False) -> int:
        if pair:
            raise ValueError("LexicalTokenizer encodes single sequences only")
        return 1

    def _convert_token_to_id_with_added_voc(self, token: str) -> int:
        """Tokens of the active side (source; target inside ``text_target`` encoding) to ids, like the encoding."""
        index = self._active.token_to_id(token)
        if index is None:
            other = self._target if self._active is self._source else self._source
            if other.token_to_id(token) is not None:
                # e.g. bad_words_ids=[[tok.convert_tokens_to_ids("I_JUMP")]] would silently ban <unk> instead
                logger.warning(
                    f"{token!r} is not in the {self._side_name()} vocabulary, so it maps to <unk> ({UNK_ID}); it is a "
                    f"{'target' if other is self._target else 'source'} token: look its id up in "
                    f"tokenizer.{'target' if other is self._target else 'source'}_vocab"
                )
            return UNK_ID
        return index

    def convert_ids_to_tokens(self, ids, skip_special_tokens: bool = False):
        """Target ids to target tokens (what the model generates), like ``decode``; source ids go through
        ``decode_source``. (``convert_tokens_to_ids`` reads the source side, as encoding does: the two are inverses
        only on target tokens inside ``text_target`` encoding, as with Marian's separate vocabularies.)"""
        if isinstance(ids, int):
            return self._target.id_to_token(ids)
        return [
            self._target.id_to_token(int(i))
            for i in ids
            if not (skip_special_tokens and int(i) < len(SPECIAL_TOKENS))
        ]

    def _encode_plus(
        self,
        text,
        text_pair=None,
        add_special_tokens: bool = True,
        padding_strategy: PaddingStrategy = PaddingStrategy.DO_NOT_PAD,
        truncation_strategy=None,
        max_length: int | None = None,
        is_split_into_words: bool = False,
        pad_to_multiple_of: int | None = None,
        padding_side: str | None = None,
        return_tensors: str | TensorType | None = None,
        return_attention_mask: bool | None = None,
        return_length: bool = False,
        verbose: bool = True,
        **kwargs,
    ) -> BatchEncoding:
        if text_pair is not None:
            raise ValueError("LexicalTokenizer encodes single sequences only; pass the target as text_target=")
        unsupported = [name for name in ("return_offsets_mapping", "return_overflowing_tokens",
                                         "return_special_tokens_mask") if kwargs.get(name)]
        if unsupported:
            raise NotImplementedError(f"LexicalTokenizer does not return {', '.join(unsupported)}")
        batched = not isinstance(text, str) and not (is_split_into_words and text and isinstance(text[0], str))
        texts = self._checked_texts(text if batched else [text])

        encodings = self._active.encode_batch(texts, add_special_tokens=add_special_tokens)
        input_ids = [encoding.ids for encoding in encodings]
        self._report_unknown_words(texts, encodings)

        truncate = truncation_strategy is not None and (
            TruncationStrategy(truncation_strategy) != TruncationStrategy.DO_NOT_TRUNCATE)
        if truncate and max_length is not None:
            # the special tokens the template added: <s> (sources with source_bos) and </s>
            prefix = int(add_special_tokens and self._active is self._source and self.source_bos)
            suffix = int(add_special_tokens)
            input_ids = [self._truncate(ids, max_length, prefix, suffix) for ids in input_ids]

        data = {"input_ids": input_ids}
        if return_length:
            data["length"] = [len(ids) for ids in input_ids]
        encoded = BatchEncoding(data)
        if padding_strategy != PaddingStrategy.DO_NOT_PAD or return_attention_mask is not False:
            encoded = self.pad(
                encoded,
                padding=padding_strategy,
                max_length=max_length,
                pad_to_multiple_of=pad_to_multiple_of,
                padding_side=padding_side,
                return_attention_mask=return_attention_mask,
            )
            if not input_ids and return_attention_mask is not False:  # pad() returns an empty batch as it is
                encoded["attention_mask"] = []
        if not batched:
            encoded = BatchEncoding({key: value[0] for key, value in encoded.items()})
        return BatchEncoding(dict(encoded), tensor_type=return_tensors, prepend_batch_axis=not batched)

    def _checked_texts(self, texts) -> list[str]:
        """`texts` (strings, or token lists joined with spaces) as strings to encode; anything else, or a special
        token written in a text, is an error naming the text."""
        side = self._side_name()
        if isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):
            raise TypeError(f"the {side} text must be a string or a list of strings, got {type(texts).__name__}")
        checked = []
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                if not isinstance(text, (list, tuple)) or not all(isinstance(word, str) for word in text):
                    raise TypeError(f"{side} text {index} is {type(text).__name__} {text!r:.60}, not a string: pass "
                                    f"strings of space-separated words (or lists of word strings)")
                text = " ".join(text)
            checked.append(text)
        self._refuse_special_tokens(checked, side)
        return checked

    @staticmethod
    def _refuse_special_tokens(texts: list[str], side: str) -> None:
        """A special token written in a text would be encoded as that token (even inside a word: ``a</s>b``):
        ``</s>`` in a target teaches the model to stop there, ``<s>`` and ``<pad>`` make labels it can never
        produce. One substring search over the whole batch; the texts are looked at only when it finds one."""
        joined = "\n".join(texts)
        found = [token for token in SPECIAL_TOKENS if token in joined]
        if not found:
            return
        token = found[0]
        index = next(index for index, text in enumerate(texts) if token in text)
        role, word = SPECIAL_TOKEN_ROLES[token]
        raise ValueError(
            f"{side} text {index} contains the special token {token}: {texts[index]!r:.200}. {token} is {role}, so a "
            f"text may not contain it: remove it from your data, or write it as an ordinary word (e.g. {word})"
        )

    def _truncate(self, ids: list[int], max_length: int, prefix: int, suffix: int) -> list[int]:
        """Drop words (from the end, or from the start with ``truncation_side="left"``) until `ids` fits in
        `max_length`; the `prefix` and `suffix` special tokens stay, so a truncated target still ends in ``</s>`` and
        teaches the model to stop."""
        if len(ids) <= max_length:
            return ids
        if max_length < prefix + suffix:
            raise ValueError(f"max_length={max_length} leaves no room for the special tokens ({prefix + suffix})")
        words = ids[prefix : len(ids) - suffix]
        keep = max_length - prefix - suffix
        words = words[:keep] if self.truncation_side == "right" else words[len(words) - keep :]
        return ids[:prefix] + words + ids[len(ids) - suffix :]

    def _report_unknown_words(self, texts: Sequence[str], encodings) -> None:
        """Count the words that became <unk>; log once per call. Runs only for sequences that contain <unk>."""
        side = self._side_name()
        unknown: collections.Counter = collections.Counter()
        for text, encoding in zip(texts, encodings):
            if UNK_ID not in encoding.ids:
                continue
            for token_id, (start, end) in zip(encoding.ids, encoding.offsets):
                if token_id == UNK_ID:
                    unknown[text[start:end]] += 1
        if unknown:
            self.unknown_token_counts[side].update(unknown)
            shown = ", ".join(f"{w!r}×{c}" for w, c in unknown.most_common(5))
            logger.warning(
                f"{sum(unknown.values())} {side} word(s) outside the {side} vocabulary were mapped to <unk>: {shown}"
            )

    # ------------------------------------------------------------------ decoding
    def _decode(self, token_ids, skip_special_tokens: bool = False, **kwargs) -> str:
        return self._decode_with(self._target, token_ids, skip_special_tokens)

    def decode_source(self, token_ids, skip_special_tokens: bool = True) -> str:
        """Decode source ids (the model's input) back to words."""
        return self._decode_with(self._source, token_ids, skip_special_tokens)

    @staticmethod
    def _decode_with(tokenizer: Tokenizer, token_ids, skip_special_tokens: bool) -> str:
        if isinstance(token_ids, int):
            token_ids = [token_ids]
        ids = [int(i) for i in token_ids if int(i) >= 0]  # -100 (ignored label) is not a token
        if skip_special_tokens:
            ids = [i for i in ids if i >= len(SPECIAL_TOKENS)]
        return " ".join(tokenizer.id_to_token(i) or "<unk>" for i in ids)

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        return " ".join(tokens)

    # ------------------------------------------------------------------ saving
    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple[str, ...]:
        prefix = f"{filename_prefix}-" if filename_prefix else ""
        paths = []
        for key, tokenizer in (("source_tokenizer_file", self._source), ("target_tokenizer_file", self._target)):
            path = os.path.join(save_directory, prefix + VOCAB_FILES_NAMES[key])
            tokenizer.save(path)
            paths.append(path)
        return tuple(paths)

    def _save_pretrained(self, save_directory, file_names, legacy_format=None, filename_prefix=None):
        return tuple(file_names) + self.save_vocabulary(str(save_directory), filename_prefix=filename_prefix)

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(name_or_path={self.name_or_path!r}, "
            f"source_vocab_size={self.source_vocab_size}, target_vocab_size={self.target_vocab_size})"
        )

    def vocab_summary(self) -> str:
        return json.dumps({"source": self.source_vocab_size, "target": self.target_vocab_size})
