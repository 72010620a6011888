"""Configuration of `LexicalSeq2SeqForConditionalGeneration`."""

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig

BACKBONES = ("lstm",)
LEXICAL_MODES = ("none", "copy", "lexical")
GATE_STYLES = ("sigmoid", "copy_token")


@strict
class LexicalSeq2SeqConfig(PreTrainedConfig):
    r"""Configuration of a sequence-to-sequence model with the lexical translation head (Akyürek & Andreas, 2021).

    `LexicalSeq2SeqConfig()` builds a small working model; the paper's LSTM is
    `LexicalSeq2SeqConfig(embedding_size=512, hidden_size=512, num_layers=2, dropout=0.4)` (plus
    `output_dropout=0.5` on SCAN and Colors).

    Args:
        source_vocab_size (`int`, defaults to 32): |V_x|, the size of the source (input) vocabulary.
        target_vocab_size (`int`, defaults to 32): |V_y|, the size of the target (output) vocabulary.
        backbone (`str`, defaults to `"lstm"`): the encoder–decoder that produces decoder states h_i and attention
            α_i. Only `"lstm"` exists so far; the head does not depend on it.
        embedding_size (`int`, defaults to 64): size of the source and target token embeddings.
        hidden_size (`int`, defaults to 64): size of the LSTM states, the attention context and the output features.
        num_layers (`int`, defaults to 2): number of LSTM layers in the encoder and in the decoder.
        bidirectional_encoder (`bool`, defaults to `False`): run the encoder in both directions. The two directions
            are projected back to `hidden_size` for attention and summed to initialise the decoder, as in the
            paper's code. The paper's LSTM is unidirectional.
        dropout (`float`, defaults to 0.1): dropout on embeddings, between LSTM layers and on the output features
            (the paper uses 0.4).
        output_dropout (`float`, defaults to 0.0): extra dropout on the output features right before p_write (the
            paper uses 0.5 on SCAN and Colors).
        lexical_mode (`str`, defaults to `"lexical"`): `"none"` (plain attentional seq2seq: the gate is fixed to 1),
            `"copy"` (the lexicon is the identity on shared token strings: the copy mechanism) or `"lexical"` (a
            learned lexicon L).
        gate (`str`, defaults to `"sigmoid"`): how p_gate is computed. `"sigmoid"` is the paper's Eq. 6/10,
            p_gate = σ(w_gateᵀ h_i). `"copy_token"` is the paper's public code: the write softmax gets one extra
            reserved class whose probability is moved onto p_lex, so p_gate = 1 − softmax(·)_copy; the same mixture
            in form, with the gate computed from the output features instead of h_i.
        lexicon_temperature (`float`, defaults to 0.0): the temperature τ the stored lexicon matrix was built with
            (0 = hard, one-hot rows). Metadata: L itself lives in the weights.
        train_lexicon (`bool`, defaults to `False`): make L a trainable parameter (the paper's "soft and fine-tuned"
            ablation). It is then stored as row logits and L = softmax(logits) stays row-stochastic.
        lexicon_info (`dict`, *optional*): a short summary of the lexicon L was built from (learner, number of
            entries, provenance). Metadata only; `lexicon.json` beside the weights holds the entries.
        max_decode_length (`int`, defaults to 128): default maximum generated length (written to the generation
            config).
        pad_token_id (`int`, defaults to 0), bos_token_id (`int`, defaults to 1), eos_token_id (`int`, defaults to
            2), unk_token_id (`int`, defaults to 3), decoder_start_token_id (`int`, defaults to 1): the special ids
            shared by both vocabularies (see `LexicalTokenizer`). Padding and the decoder start token are never
            generated.
    """

    model_type = "lexical_seq2seq"
    keys_to_ignore_at_inference = ["past_key_values"]
    attribute_map = {"num_hidden_layers": "num_layers", "vocab_size": "target_vocab_size"}

    source_vocab_size: int = 32
    target_vocab_size: int = 32
    backbone: str = "lstm"
    embedding_size: int = 64
    hidden_size: int = 64
    num_layers: int = 2
    bidirectional_encoder: bool = False
    dropout: float = 0.1
    output_dropout: float = 0.0
    lexical_mode: str = "lexical"
    gate: str = "sigmoid"
    lexicon_temperature: float = 0.0
    train_lexicon: bool = False
    lexicon_info: dict | None = None
    max_decode_length: int = 128
    pad_token_id: int | None = 0
    bos_token_id: int | None = 1
    eos_token_id: int | None = 2
    unk_token_id: int = 3
    decoder_start_token_id: int | None = 1
    is_encoder_decoder: bool = True
    use_cache: bool = True
    tie_word_embeddings: bool = False

    def validate_architecture(self):
        """Part of `@strict` validation: reject settings the model cannot build, with the allowed values."""
        if self.backbone not in BACKBONES:
            raise ValueError(f"backbone must be one of {BACKBONES}, got {self.backbone!r}")
        if self.lexical_mode not in LEXICAL_MODES:
            raise ValueError(f"lexical_mode must be one of {LEXICAL_MODES}, got {self.lexical_mode!r}")
        if self.gate not in GATE_STYLES:
            raise ValueError(f"gate must be one of {GATE_STYLES}, got {self.gate!r}")
        for name in ("dropout", "output_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")
        for name in ("source_vocab_size", "target_vocab_size"):
            if getattr(self, name) <= 4:
                raise ValueError(f"{name} must exceed the 4 special tokens, got {getattr(self, name)}")
        if self.lexicon_temperature < 0:
            raise ValueError(f"lexicon_temperature must be >= 0, got {self.lexicon_temperature}")

    @property
    def non_generatable_token_ids(self) -> list[int]:
        """Target ids that get zero probability: padding and the decoder start token."""
        return sorted({self.pad_token_id, self.decoder_start_token_id})


__all__ = ["LexicalSeq2SeqConfig"]
