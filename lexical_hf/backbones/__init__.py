"""The encoder–decoders under the lexical head, by the name `LexicalSeq2SeqConfig(backbone=...)` gives them.

Adding a backbone is one new file in this folder (a `common.Backbone` subclass; `common.py` states the contract) and
one line here.
"""

from .common import Backbone, DecoderCache, LexicalEncoderOutput, check_source
from .lstm import LSTMEncoderDecoder
from .transformer import TransformerEncoderDecoder

BACKBONES: dict[str, type[Backbone]] = {
    "lstm": LSTMEncoderDecoder,
    "transformer": TransformerEncoderDecoder,
}

__all__ = ["BACKBONES", "Backbone", "DecoderCache", "LexicalEncoderOutput", "check_source"]
