"""Configuration of `LexicalSeq2SeqForConditionalGeneration`."""

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig

from .tokenization_lexical import BOS_ID, EOS_ID, PAD_ID, UNK_ID

POSITION_ENCODINGS = ("sinusoidal", "learned", "relative")
ATTENTION_SOURCES = ("cross_attention_mean", "dedicated_head")
LEXICAL_MODES = ("none", "copy", "lexical")
GATE_STYLES = ("sigmoid", "copy_token")
LOSS_NORMALIZATIONS = ("tokens", "sequences")
MIXTURE_NORMALIZATIONS = ("paper", "code")
# the ids LexicalTokenizer gives <pad>, <s>, </s>, <unk> on both sides; the decoder starts from <s>
FIXED_SPECIAL_IDS = {"pad_token_id": PAD_ID, "bos_token_id": BOS_ID, "eos_token_id": EOS_ID, "unk_token_id": UNK_ID,
                     "decoder_start_token_id": BOS_ID}


@strict
class LexicalSeq2SeqConfig(PreTrainedConfig):
    r"""Configuration of a sequence-to-sequence model with the lexical translation head (Akyürek & Andreas, 2021).

    `LexicalSeq2SeqConfig()` builds a small working model; the paper's LSTM is
    `LexicalSeq2SeqConfig(embedding_size=512, hidden_size=512, num_layers=2, dropout=0.4)` (plus
    `output_dropout=0.5` on SCAN and Colors). `LexicalSeq2SeqConfig(backbone="transformer")` swaps the LSTM for a
    Transformer encoder–decoder (see `lexical_hf/backbones/transformer.py`); the head is the same.

    Args:
        source_vocab_size (`int`, defaults to 32): |V_x|, the size of the source (input) vocabulary.
        target_vocab_size (`int`, defaults to 32): |V_y|, the size of the target (output) vocabulary.
        backbone (`str`, defaults to `"lstm"`): the encoder–decoder that produces decoder states h_i and attention
            α_i: `"lstm"` (the paper's attentional LSTM), `"transformer"` (an encoder–decoder Transformer),
            `"syntactic_attention"` (Russin et al. 2019), or, without attention (`lexical_mode="none"` only),
            `"stack_lstm"`, `"queue_lstm"`, `"deque_lstm"` and `"deep_lstm"` (Grefenstette et al. 2015). The head
            does not depend on it.
        embedding_size (`int`, defaults to 64): size of the source and target token embeddings. With the
            Transformer, embeddings of another size than `hidden_size` are projected to `hidden_size` by a linear layer
            (no projection when the two are equal).
        hidden_size (`int`, defaults to 64): size of the LSTM states, the attention context and the output features;
            d_model for the Transformer.
        num_layers (`int`, defaults to 2): number of LSTM layers (or Transformer layers) in the encoder and in the
            decoder.
        bidirectional_encoder (`bool`, defaults to `False`): run the encoder in both directions. The two directions
            are projected back to `hidden_size` for attention and summed to initialise the decoder, as in the
            paper's code. The paper's LSTM is unidirectional.
        dropout (`float`, defaults to 0.1): dropout on embeddings, between LSTM layers and on the output features
            (the paper uses 0.4). Transformer: dropout on embeddings, on every residual branch and inside the
            feed-forward block.
        output_dropout (`float`, defaults to 0.0): extra dropout on the output features right before p_write (the
            paper uses 0.5 on SCAN and Colors).
        feed_dropout (`bool`, defaults to `False`): LSTM only. `False`: the fed-back vector o_{i-1} is the output
            features after `dropout`, and `output_dropout` acts on p_write's input only. `True` reproduces the paper's
            public code, which drops the feed harder: o_i goes through `output_dropout` too before it is fed back
            (its "high drop" sits before the feed is taken), and [emb(y_{i-1}); o_{i-1}] is dropped again with
            `dropout` at the decoder's input. `run_lexical.py --preset paper` sets it, with the two options below and
            `gate="copy_token"` (see results/colors_fidelity_experiments.md).
        combine_decoder_input (`bool`, defaults to `False`): LSTM only. `False`: the output features are
            o_i = W_o [c_i; h_i], the paper's p_write ∝ exp(W_write [c_i; h_i]). `True`: W_o also reads the step's
            (dropped) decoder input, o_i = W_o [c_i; h_i; emb(y_{i-1}); o_{i-1}], as the paper's public code does.
        attention_query_bias (`bool`, defaults to `False`): LSTM only. Give the attention query a bias,
            score_j = (W_att h_i + b)·e_j, as the paper's public code does (its equation has none).
        lexical_mode (`str`, defaults to `"lexical"`): `"none"` (plain attentional seq2seq: the gate is fixed to 1),
            `"copy"` (the lexicon is the identity on shared token strings: the copy mechanism) or `"lexical"` (a
            learned lexicon L).
        gate (`str`, defaults to `"sigmoid"`): how p_gate is computed (unused with `lexical_mode="none"`, where
            p_gate = 1). `"sigmoid"` is the paper's Eq. 6/10,
            p_gate = σ(w_gateᵀ h_i). `"copy_token"` is the paper's public code: the write softmax gets one extra
            reserved class whose probability is moved onto p_lex, so p_gate = 1 − softmax(·)_copy; the same mixture
            in form, with the gate computed from the output features instead of h_i.
        loss_normalization (`str`, defaults to `"tokens"`): what the summed negative log-likelihood of a batch is
            divided by. `"tokens"`: the number of target tokens (labels not -100), the transformers convention.
            `"sequences"`: the number of sequences, as the paper's public code does (`EncDec.forward`: a summed NLL
            over the batch size), which weighs a batch by its target length and scales gradients, and so what
            `max_grad_norm` clips, by the mean target length. Under `Trainer` both are taken over the whole
            effective batch (all accumulated micro-batches and processes), so gradient accumulation changes nothing.
        probability_floor (`float`, defaults to 0.0): ε added to every generatable token's probability before the
            log, p(w) = (p(w) + ε) / (1 + G·ε) over the G generatable ids, as the paper's public code does in its
            copy and lexicon path (ε = 1e-7; the paper is silent). A token's loss is then at most −log ε, and a token
            the model gives far less than ε contributes almost no gradient. 0 turns it off. With
            `lexical_mode="none"` (no mixture, and no floor in the code either) a floor above 0 is an error.
        mixture_normalization (`str`, defaults to `"paper"`): how the output distribution is normalised. `"paper"`:
            p_write is a softmax over the generatable ids and p = p_gate·p_write + (1 − p_gate)·p_lex, as the paper's
            equations; lexical mass that abstaining source tokens send to `<unk>` stays on `<unk>` (never a target,
            so training pushes attention off them while the lexicon is used). `"code"`: the paper's public code — the
            write softmax runs over every class, the mixture is formed and then renormalised over the generatable ids
            other than `<unk>`, so that mass is dropped and the rest rescaled (`<unk>` gets no probability; a label
            `<unk>` is then an error). Without a lexicon, `"code"` is a softmax that excludes `<unk>`.
        static_shapes (`bool`, defaults to `False`): recurrent backbones run every row at every position, with the
            state frozen on padding, instead of packing the source and dropping each row of a teacher-forced
            target once it is over. Every step then has one shape per batch shape and no host synchronisation,
            which `torch.compile` (``mode="reduce-overhead"``: CUDA graphs) needs; it is on while `torch.compile`
            traces the model whatever this says. The results equal the default path's up to float rounding, but
            the path draws other dropout masks and computes the padded positions, so on a CPU it is slower.
        lexicon_temperature (`float`, defaults to 0.0): the temperature τ the stored lexicon matrix was built with
            (0 = hard, one-hot rows). Metadata: L itself lives in the weights.
        train_lexicon (`bool`, defaults to `False`): make L a trainable parameter (the paper's "soft and fine-tuned"
            ablation). It is then stored as row logits and L = softmax(logits) stays row-stochastic. An error with
            `lexical_mode="none"`, which has no L.
        lexicon_info (`dict`, *optional*): a short summary of the lexicon L was built from (learner, number of
            entries, provenance). Metadata only; `lexicon.json` beside the weights holds the entries.
        vocabulary_sha256 (`str`, *optional*): the fingerprint (`LexicalTokenizer.vocabulary_sha256`) of the
            tokenizer whose ids index L and the embeddings, recorded by `set_lexicon(lexicon, tokenizer)`. A later
            `set_lexicon` or `generate_texts` with a tokenizer of other vocabularies is then an error.
        num_attention_heads (`int`, defaults to 4): Transformer only: heads of every self- and cross-attention;
            must divide `hidden_size`.
        ffn_size (`int`, *optional*): Transformer only: inner size of the feed-forward blocks (ReLU). `None` means
            4 × `hidden_size`.
        norm_first (`bool`, defaults to `True`): Transformer only: pre-norm (LayerNorm before each sub-layer, plus a
            final LayerNorm on the encoder and decoder outputs) if `True`, the original post-norm if `False`.
        position_encoding (`str`, defaults to `"sinusoidal"`): Transformer only: `"sinusoidal"` (fixed, added to the
            embeddings), `"learned"` (a trained table of `max_position_embeddings` rows, added to the embeddings) or
            `"relative"` (no absolute positions; clipped relative position embeddings on the keys of every
            self-attention, Shaw et al. 2018).
        max_position_embeddings (`int`, defaults to 512): Transformer with `position_encoding="learned"`: the longest
            source or target sequence (decoder start token included).
        relative_attention_max_distance (`int`, defaults to 16): Transformer with `position_encoding="relative"`:
            relative distances are clipped to [-k, k], so 2k + 1 embeddings per self-attention layer.
        attention_source (`str`, defaults to `"cross_attention_mean"`): Transformer only: where the head's α_i comes
            from. `"cross_attention_mean"`: the last decoder layer's cross-attention weights averaged over heads
            (before attention dropout). `"dedicated_head"`: a separate single-head attention from the final decoder
            state over the encoder outputs, used only by the lexical head (the decoder does not read its context).
            The LSTM always uses its one attention.
        attention_dropout (`float`, defaults to 0.0): Transformer only: dropout on attention weights inside the
            attention layers (α given to the head is taken before it, so its rows still sum to 1).
        syntax_encoder (`str`, defaults to `"paper"`): Syntactic Attention only (`backbone="syntactic_attention"`, see
            `lexical_hf/backbones/syntactic_attention.py`; there `hidden_size` is the syntactic biLSTM's size per
            direction, so the annotations and the decoder state are 2 × `hidden_size`, `embedding_size` is the
            semantic stream's, and `num_layers` counts the layers of each biLSTM; the decoder LSTM has one).
            `"paper"`: the paper's (v1) syntactic stream, a biLSTM over the same embedding as the semantic stream,
            whose annotation of word j is [forward state of j−1; backward state of j+1]. `"code"`: the authors'
            public code, the version the lexicon paper ran: a separate syntax embedding and first biLSTM of
            `hidden_size` / 2, learned start and end annotations at each source's first and last position, and a
            second biLSTM whose states are the annotations.
        syntax_action (`bool`, defaults to `False`): Syntactic Attention only: the output features are [d_i; c_i]
            (semantics and syntax) instead of d_i alone, the paper's "syntactic action" ablation.
        sequential_semantics (`bool`, defaults to `False`): Syntactic Attention only: the semantic stream m_j comes
            from an extra biLSTM (`embedding_size` / 2 per direction) instead of the context-free embedding, the
            paper's "sequential semantics" ablation.
        memory_width (`int`, defaults to 64): Stack-, Queue- and DeQue-LSTM only (`backbone="stack_lstm"`,
            `"queue_lstm"`, `"deque_lstm"`, Grefenstette et al. 2015; see `lexical_hf/backbones/memory_lstm.py`):
            m, the width of a memory row (the paper's is 256). There `hidden_size` is the LSTM controller's size,
            `num_layers` its layers (the paper's controller has 1) and `embedding_size` the size of the separate
            source and target embeddings; `backbone="deep_lstm"`, the paper's baseline, is an LSTM of `num_layers`
            layers over the joint sequence. None of these backbones attends to the source: `lexical_mode="none"`.
        separate_target_lstm (`bool`, defaults to `False`): Stack-, Queue-, DeQue-LSTM and deep LSTM only. `False`:
            the paper's network, one LSTM reading the joint sequence source ||| target. `True`: the separator and
            target steps run LSTM weights of their own (an encoder and a decoder LSTM), continuing the state and
            the memory the source ended in; the memory interface stays one set of projections.
        memory_push_bias (`float`, *optional*): Stack-, Queue- and DeQue-LSTM only: the initial push bias b_d of
            every end (the DeQue's bottom end: see `memory_bottom_push_bias`). `None` (the default): `nn.Linear`'s
            initialisation, as the paper, which sets only the pop bias (to -1), leaves it. A number: b_d starts
            there; -1 starts the pushes at the pops' σ(-1) ≈ 0.27. Below
            a newly pushed row, a read reaches the next full-strength row only by the amount the pop exceeds the
            push, max(0, u - d), which is 0 with no gradient at the paper's start (d ≈ σ(0) = 0.5 > u ≈ 0.27); see
            results/neural_memory.md.
        memory_bottom_push_bias (`float`, *optional*): DeQue-LSTM only: the initial push bias of the bottom end
            alone; the top end's follows `memory_push_bias`. `None` (the default): as the top end's. A low value,
            e.g. -3 (σ ≈ 0.05), starts the DeQue out as a queue, pushing at the top and reading the oldest rows at
            the bottom, where pushes on the read end would otherwise hide the next row (see `memory_push_bias`). It
            favours what a queue solves (copy) over what a stack solves (reversal): results/neural_memory.md.
        max_decode_length (`int`, defaults to 128): default maximum generated length (written to the generation
            config).
        pad_token_id (`int`, defaults to 0), bos_token_id (`int`, defaults to 1), eos_token_id (`int`, defaults to
            2), unk_token_id (`int`, defaults to 3), decoder_start_token_id (`int`, defaults to 1): the special ids
            shared by both vocabularies, fixed by `LexicalTokenizer` (other values are an error). Padding and the
            decoder start token are never generated.
    """

    model_type = "lexical_seq2seq"
    keys_to_ignore_at_inference = ["cache", "past_key_values"]  # the decoder state's name since / before transformers 5.24
    attribute_map = {"num_hidden_layers": "num_layers", "vocab_size": "target_vocab_size"}

    source_vocab_size: int = 32
    target_vocab_size: int = 32
    backbone: str = "lstm"
    embedding_size: int = 64
    hidden_size: int = 64
    num_layers: int = 2
    bidirectional_encoder: bool = False
    dropout: float | int = 0.1  # `| int`: dropout=0 is a number, not a type error
    output_dropout: float | int = 0.0
    feed_dropout: bool = False
    combine_decoder_input: bool = False
    attention_query_bias: bool = False
    lexical_mode: str = "lexical"
    gate: str = "sigmoid"
    loss_normalization: str = "tokens"
    probability_floor: float | int = 0.0
    mixture_normalization: str = "paper"
    static_shapes: bool = False
    lexicon_temperature: float | int = 0.0
    train_lexicon: bool = False
    num_attention_heads: int = 4
    ffn_size: int | None = None
    norm_first: bool = True
    position_encoding: str = "sinusoidal"
    max_position_embeddings: int = 512
    relative_attention_max_distance: int = 16
    attention_source: str = "cross_attention_mean"
    attention_dropout: float | int = 0.0
    syntax_encoder: str = "paper"
    syntax_action: bool = False
    sequential_semantics: bool = False
    memory_width: int = 64
    separate_target_lstm: bool = False
    memory_push_bias: float | int | None = None
    memory_bottom_push_bias: float | int | None = None
    lexicon_info: dict | None = None
    vocabulary_sha256: str | None = None
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
        from .backbones import BACKBONES  # the registry imports torch modules; the config module stays light

        if self.backbone not in BACKBONES:
            raise ValueError(f"backbone must be one of {tuple(BACKBONES)}, got {self.backbone!r}")
        if self.lexical_mode not in LEXICAL_MODES:
            raise ValueError(f"lexical_mode must be one of {LEXICAL_MODES}, got {self.lexical_mode!r}")
        if self.gate not in GATE_STYLES:
            raise ValueError(f"gate must be one of {GATE_STYLES}, got {self.gate!r}")
        if self.loss_normalization not in LOSS_NORMALIZATIONS:
            raise ValueError(f"loss_normalization must be one of {LOSS_NORMALIZATIONS}, got {self.loss_normalization!r}")
        if self.mixture_normalization not in MIXTURE_NORMALIZATIONS:
            raise ValueError(f"mixture_normalization must be one of {MIXTURE_NORMALIZATIONS}, got "
                             f"{self.mixture_normalization!r}")
        if not 0.0 <= self.probability_floor < 1.0 / self.target_vocab_size:
            raise ValueError(f"probability_floor must be in [0, 1/target_vocab_size = {1.0 / self.target_vocab_size:.3g}), "
                             f"got {self.probability_floor}")
        if self.lexical_mode == "none" and self.probability_floor > 0:
            raise ValueError(f"probability_floor={self.probability_floor} floors the lexical mixture, which "
                             "lexical_mode='none' does not have: leave it at 0")
        for name in ("dropout", "output_dropout", "attention_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")
        # LexicalTokenizer fixes the special ids on both sides; another id here would never be generated (eos: the
        # model could never stop) or would be generated where it must not (decoder start)
        wrong = {name: getattr(self, name) for name, token_id in FIXED_SPECIAL_IDS.items() if getattr(self, name) != token_id}
        if wrong:
            raise ValueError(f"special token ids are fixed by LexicalTokenizer ({FIXED_SPECIAL_IDS}), got {wrong}")
        if self.max_decode_length < 1:
            raise ValueError(f"max_decode_length must be >= 1, got {self.max_decode_length}")
        for name in ("embedding_size", "hidden_size", "num_layers"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("source_vocab_size", "target_vocab_size"):
            if getattr(self, name) <= 4:
                raise ValueError(f"{name} must exceed the 4 special tokens, got {getattr(self, name)}")
        if self.lexical_mode == "none" and self.train_lexicon:
            # without a lexicon there is nothing to fine-tune: the flag would be dropped silently
            raise ValueError("train_lexicon=True needs a lexicon (lexical_mode='lexical' or 'copy'), got "
                             "lexical_mode='none'")
        if self.lexicon_temperature < 0:
            raise ValueError(f"lexicon_temperature must be >= 0, got {self.lexicon_temperature}")
        if self.position_encoding not in POSITION_ENCODINGS:
            raise ValueError(f"position_encoding must be one of {POSITION_ENCODINGS}, got {self.position_encoding!r}")
        if self.attention_source not in ATTENTION_SOURCES:
            raise ValueError(f"attention_source must be one of {ATTENTION_SOURCES}, got {self.attention_source!r}")
        self._validate_backbone_options(BACKBONES)

    def _validate_backbone_options(self, backbones):
        """An option of another backbone set to a non-default value is a forgotten ``backbone=...``, not a setting
        to drop silently; then the chosen backbone's own checks."""
        chosen = backbones[self.backbone]
        for name, other in backbones.items():
            foreign = [option for option in other.config_options if option not in chosen.config_options
                       and getattr(self, option) != getattr(type(self), option)]
            if name != self.backbone and foreign:
                raise ValueError(f"{', '.join(foreign)}: {other.display_name} options, but backbone={self.backbone!r} "
                                 f"(set backbone={name!r}, or leave them at their defaults)")
        if self.lexical_mode != "none" and not chosen.has_source_attention:
            raise ValueError(f"backbone={self.backbone!r} has no attention over the source, which the lexicon needs "
                             f"(p_lex = Σ_j α_j L[x_j]): use lexical_mode='none'")
        chosen.validate_config(self)

    @property
    def non_generatable_token_ids(self) -> list[int]:
        """Target ids that get zero probability: padding and the decoder start token."""
        return sorted({self.pad_token_id, self.decoder_start_token_id})


__all__ = ["LexicalSeq2SeqConfig"]
