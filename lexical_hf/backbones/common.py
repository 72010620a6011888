"""What every backbone shares: the encoder output, source validation, the decoder-state base and the `Backbone` base.

A backbone is an encoder–decoder that gives the lexical head what it reads at every target position i: output
features o_i, gate features h_i and an attention α_i over the source. The head knows nothing about backbones, and
backbones know nothing about lexicons; they meet in `modeling_lexical.py`. The contract, shapes included
(B batch, S source length, T target positions):

    encoder(input_ids (B, S), attention_mask (B, S) | None, output_attentions=, output_hidden_states=)
        -> LexicalEncoderOutput with last_hidden_state (B, S, H) and source_ids (B, S) at least; every tensor field
        batch-first (beam search expands them along dim 0). It calls `check_source` first, has
        ``main_input_name = "input_ids"``, an `embed_tokens` attribute and `set_input_embeddings(embedding)`.
    decoder(decoder_input_ids (B, T), encoder_outputs, attention_mask (B, S), cache | None, target_lengths (B,) | None)
        -> features (B, T, feature_size), gate_features (B, T, gate_feature_size), attention (B, T, S), new cache
        With a cache, decoder_input_ids holds only the tokens the cache has not consumed. The cache passed in is never
        modified. target_lengths (teacher forcing only) says row b needs only its first target_lengths[b] positions;
        a backbone may ignore it.

Adding a backbone: one file in this folder with a `Backbone` subclass, and one line in `BACKBONES`
(`backbones/__init__.py`). Its options, if it has any, are fields of `LexicalSeq2SeqConfig` (documented there, like
every setting) that it lists in `config_options`, so that the config refuses them for other backbones.
"""

import contextlib
from dataclasses import dataclass

import torch
from torch import nn
from transformers.utils import ModelOutput


@dataclass
class LexicalEncoderOutput(ModelOutput):
    """Encoder output. Every tensor is batch-first so that `generate()` can expand it for beam search.

    Attributes:
        last_hidden_state: (B, S, H) encoder states e_j used as attention memory.
        source_ids: (B, S) the source token ids, needed by the lexical head at every decoding step.
        final_hidden: (B, num_layers, H) final recurrent hidden state (recurrent encoders only), initialises the
            decoder.
        final_cell: (B, num_layers, H) final LSTM cell state (LSTM only).
        hidden_states: with `output_hidden_states`, the encoder's states: the embeddings' output and each layer's
            output (Transformer), or the last layer's states (LSTM, whose layers run fused), each (B, S, H).
        attentions: with `output_attentions`, one (B, heads, S, S) tensor per self-attention layer (Transformer).
    """

    last_hidden_state: torch.Tensor | None = None
    source_ids: torch.Tensor | None = None
    final_hidden: torch.Tensor | None = None
    final_cell: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


def in_functorch_transform() -> bool:
    """Whether this code runs under a `torch.func` transform (`vmap` over several models' stacked weights, say)."""
    peek = getattr(torch._C._functorch, "peek_interpreter_stack", None)
    return peek is not None and peek() is not None


def in_graph() -> bool:
    """Whether this code runs inside a graph: traced by `torch.compile`, captured into a CUDA graph, or under a
    `torch.func` transform. Host reads (`.item()`, `.tolist()`, a branch on a tensor's value) are impossible there, so
    the input checks that need them are skipped; the training pipeline's data collator runs them on the host instead
    (`check_inputs`).

    A capture needs CUDA initialised in this process, so a process without it (a data-loading worker forked from a
    training process on a GPU, where any CUDA call fails) is not asked."""
    return (torch.compiler.is_compiling() or in_functorch_transform()
            or (torch.cuda.is_initialized() and torch.cuda.is_current_stream_capturing()))


def check_source(input_ids: torch.Tensor, attention_mask: torch.Tensor | None, pad_token_id: int,
                 source_vocab_size: int) -> torch.Tensor:
    """Validate a source batch and return its (B, S) attention mask (``input_ids != pad_token_id`` when omitted).

    Every encoder calls this first, so the checks hold on every path into the model: `forward`, and `generate()`,
    which runs the encoder through `get_encoder()` without calling `forward`.

    Raises:
        ValueError: not a non-empty (batch, length) tensor; a mask of another shape than `input_ids` or with values
            other than 0 and 1; an empty sequence; left padding (a recurrent encoder would read padding as input,
            and every model reads the last source positions as the sequence's end); ids outside the source
            vocabulary (a batch encoded with another tokenizer).
    """
    if in_graph():  # no host reads there: the data collator has checked the batch (`check_inputs`)
        return (input_ids.ne(pad_token_id) if attention_mask is None else attention_mask).long()
    if input_ids.dim() != 2 or input_ids.shape[1] == 0:
        raise ValueError(f"input_ids must be a non-empty (batch, length) tensor, got shape {tuple(input_ids.shape)}")
    if attention_mask is None:
        attention_mask = input_ids.ne(pad_token_id)
    elif attention_mask.shape != input_ids.shape:
        # broadcasting a (B, 1) mask would silently end every source after its first token
        raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)}, input_ids {tuple(input_ids.shape)}: "
                         "they must be equal (one 0/1 flag per source token)")
    elif not ((attention_mask == 0) | (attention_mask == 1)).all():
        raise ValueError("attention_mask must hold 0 (padding) and 1 (token) only; a soft mask is not supported")
    attention_mask = attention_mask.long()
    lengths = attention_mask.sum(-1)
    if (lengths == 0).any():
        empty = (lengths == 0).nonzero().flatten().tolist()
        raise ValueError(f"empty source sequence(s) at batch index {empty}: every input needs at least one token")
    if not torch.equal(attention_mask.cumprod(-1), attention_mask):
        raise ValueError(
            "attention_mask must be right-padded (1s then 0s): LexicalTokenizer pads on the right; "
            "set tokenizer.padding_side = 'right'"
        )
    if (input_ids.min() < 0) or (input_ids.max() >= source_vocab_size):
        raise ValueError(
            f"input_ids must be in [0, {source_vocab_size}) (source_vocab_size), "
            f"got min {input_ids.min().item()} max {input_ids.max().item()}: was it encoded with another tokenizer?"
        )
    return attention_mask


class DecoderCache:
    """Base of every backbone's decoder state carried between `generate()` steps.

    The class attributes and methods are the parts of transformers' `Cache` interface that `generate()` reads: the
    number of target tokens consumed, whether the state has a fixed size per layer, and the in-place reorder that
    follows beam search's choice of parents. None of these states can be cropped, so assisted and prompt-lookup
    decoding (which roll a cache back) are refused by the model.
    """

    is_croppable = False
    is_compileable = False
    seq_length: int = 0

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.seq_length

    @property
    def is_linear(self) -> list[bool]:
        raise NotImplementedError

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        raise NotImplementedError


class Backbone(nn.Module):
    """Base class of the encoder–decoders in `BACKBONES`.

    A subclass sets `encoder` (an `nn.Module` with ``main_input_name = "input_ids"``), `decoder`, `feature_size` and
    `gate_feature_size` in its ``__init__(config)``, and may override the class attributes and hooks below.

    Attributes:
        display_name: how messages name the backbone ("LSTM").
        config_options: names of `LexicalSeq2SeqConfig` fields that only this backbone reads. The config refuses a
            non-default value of another backbone's option (a forgotten ``backbone=...`` is not dropped silently).
        applies_output_dropout: True when the backbone applies ``config.output_dropout`` itself (the LSTM with
            ``feed_dropout``), so the head does not apply it again.
        has_source_attention: False for backbones without an attention over the source, which then support
            ``lexical_mode="none"`` only.
    """

    display_name: str = "?"
    config_options: tuple[str, ...] = ()
    applies_output_dropout: bool = False
    has_source_attention: bool = True

    @classmethod
    def validate_config(cls, config) -> None:
        """Raise `ValueError` for settings this backbone cannot build (called by the config's validation)."""

    def generation_context(self):
        """A context manager that `generate()` runs in (e.g. to reuse per-call weight preparations)."""
        return contextlib.nullcontext()
