"""The encoder–decoders under the lexical head, by the name `LexicalSeq2SeqConfig(backbone=...)` gives them.

Adding a backbone is one new file in this folder (a `common.Backbone` subclass; `common.py` states the contract) and
one line here.
"""

from .common import Backbone, DecoderCache, LexicalEncoderOutput, check_source
from .lstm import LSTMEncoderDecoder
from .memory_lstm import DeepLSTM, DequeLSTM, QueueLSTM, StackLSTM
from .syntactic_attention import SyntacticAttentionEncoderDecoder
from .transformer import TransformerEncoderDecoder

BACKBONES: dict[str, type[Backbone]] = {
    "lstm": LSTMEncoderDecoder,
    "transformer": TransformerEncoderDecoder,
    "syntactic_attention": SyntacticAttentionEncoderDecoder,
    "stack_lstm": StackLSTM,
    "queue_lstm": QueueLSTM,
    "deque_lstm": DequeLSTM,
    "deep_lstm": DeepLSTM,
}

__all__ = ["BACKBONES", "Backbone", "DecoderCache", "LexicalEncoderOutput", "check_source"]
