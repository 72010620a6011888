"""`LexicalSeq2SeqForConditionalGeneration`: a backbone (h_i, α_i) + the lexical translation head, native to transformers.

Read top to bottom: the output dataclass, the pre-trained base (initialisation), then the model: forward (teacher
forcing and cached decoding share one path), generation glue, and the lexicon plumbing (set / save / load).
"""

import copy
import json
import os
import re
import tempfile
from dataclasses import dataclass

import torch
from safetensors import SafetensorError
from torch import nn
from torch.nn import functional as F
from transformers import GenerationConfig, GenerationMixin, PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput, logging

from ._compat import CACHE_NAME, pinned_revision, with_cache_field
from .backbones import BACKBONES, DecoderCache, LexicalEncoderOutput, check_source
from .backbones.common import in_graph
from .backbones.recurrence import LSTMWeights
from .configuration_lexical import LexicalSeq2SeqConfig
from .files import sha256_of_file
from .head import LexicalTranslationHead
from .lexicon.lexicon import LEXICON_FILE, Lexicon

logger = logging.get_logger(__name__)


@dataclass
class _LexicalSeq2SeqLMOutputFields(ModelOutput):
    """Output of `LexicalSeq2SeqForConditionalGeneration.forward`.

    Attributes:
        loss: negative log-likelihood of the mixture summed over labels that are not -100, divided by their number
            (`config.loss_normalization="tokens"`) or by the number of sequences (`"sequences"`), or by the
            `num_items_in_batch` that `Trainer` passes (the count over the whole accumulated batch).
        logits: (B, T, |V_y|) log-probabilities of the mixture (log-softmax is the identity on them, so they can be
            used wherever logits are expected); -inf on ids that are never generated.
        gate: (B, T) p_gate, the weight of the write distribution (1 − gate is the lexicon's share).
        cross_attentions: one (B, T, S) tensor: the attention α used by the lexical head.
        encoder_last_hidden_state: (B, S, H) encoder states.
        encoder_hidden_states: with `output_hidden_states`, the encoder's states (see `LexicalEncoderOutput`).
        encoder_attentions: with `output_attentions`, the encoder's self-attention weights (Transformer).
        decoder_hidden_states: with `output_hidden_states`, one (B, T, H) tensor: the decoder features the head reads
            (o_i for the LSTM, the last layer's output for the Transformer).
        decoder_attentions: always None (the LSTM decoder has no self-attention; the Transformer's is not returned);
            the field exists so that `generate(output_attentions=True)` can collect `cross_attentions`, α per step.
        cache: the decoder's state after the last position (when `use_cache`); `past_key_values` before transformers
            5.24, which renamed it (`_compat.CACHE_NAME`).
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    gate: torch.FloatTensor | None = None
    cross_attentions: tuple[torch.FloatTensor, ...] | None = None
    encoder_last_hidden_state: torch.FloatTensor | None = None
    encoder_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    encoder_attentions: tuple[torch.FloatTensor, ...] | None = None
    decoder_hidden_states: tuple[torch.FloatTensor, ...] | None = None
    decoder_attentions: tuple[torch.FloatTensor, ...] | None = None


LexicalSeq2SeqLMOutput = with_cache_field(_LexicalSeq2SeqLMOutputFields, "LexicalSeq2SeqLMOutput")


class LexicalSeq2SeqPreTrainedModel(PreTrainedModel):
    config_class = LexicalSeq2SeqConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = False
    _no_split_modules = []

    @property
    def accepts_loss_kwargs(self) -> bool:
        """Read by `Trainer`. With token normalisation it passes `num_items_in_batch`, the label count of the whole
        accumulated batch, which `forward` divides by (and leaves the loss unscaled by the accumulation steps). With
        `loss_normalization="sequences"` it must not (its count is of tokens): Trainer then divides each
        micro-batch's per-sequence loss by the accumulation steps, which is what the paper's code does."""
        return self.config.loss_normalization == "tokens"

    @torch.no_grad()
    def _init_weights(self, module):
        """PyTorch's own initialisation for every layer (what the paper's code used); transformers would otherwise
        overwrite it with its normal(0, 0.02) default. The head's L gets its placeholder (uniform rows) here, so a
        model built on the meta device and then `to_empty()` + `init_weights()` is the model `__init__` builds.
        Weights that `from_pretrained` loaded are flagged by transformers and left alone (its guard covers
        `torch.nn.init`, which `reset_parameters` calls, and `initialization.copy_`)."""
        if isinstance(module, (nn.Linear, nn.Embedding, nn.LSTM, nn.LayerNorm, LSTMWeights)):
            module.reset_parameters()
        elif isinstance(module, LexicalTranslationHead) and module.uses_lexicon:
            placeholder = module.uniform_lexicon()
            if module.train_lexicon:
                init.copy_(module.lexicon_logits, module._probabilities_to_logits(placeholder))
            else:
                init.copy_(module.lexicon, placeholder)


class LexicalSeq2SeqForConditionalGeneration(LexicalSeq2SeqPreTrainedModel, GenerationMixin):
    """Sequence-to-sequence model whose output layer is the lexical translation head.

    Example:
        ```python
        >>> from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration, LexicalTokenizer
        >>> tok = LexicalTokenizer.from_texts(["dax", "lug"], ["RED", "BLUE"])
        >>> config = LexicalSeq2SeqConfig(source_vocab_size=tok.source_vocab_size, target_vocab_size=tok.target_vocab_size)
        >>> model = LexicalSeq2SeqForConditionalGeneration(config)
        >>> batch = tok(["dax", "lug"], text_target=["RED", "BLUE"], return_tensors="pt")
        >>> loss = model(**batch).loss
        ```
    """

    def __init__(self, config: LexicalSeq2SeqConfig):
        super().__init__(config)
        self.model = BACKBONES[config.backbone](config)  # the config has checked the name
        self.lexical_head = LexicalTranslationHead(
            feature_size=self.model.feature_size,
            gate_feature_size=self.model.gate_feature_size,
            source_vocab_size=config.source_vocab_size,
            target_vocab_size=config.target_vocab_size,
            non_generatable_ids=config.non_generatable_token_ids,
            lexical_mode=config.lexical_mode,
            gate=config.gate,
            train_lexicon=config.train_lexicon,
            output_dropout=0.0 if self.model.applies_output_dropout else config.output_dropout,
            probability_floor=config.probability_floor,
            mixture_normalization=config.mixture_normalization,
            unknown_id=config.unk_token_id,
        )
        self.lexicon = None  # the Lexicon artifact L was built from, if any (saved as lexicon.json)
        self.post_init()
        self._apply_generation_defaults(self.generation_config)

    # ------------------------------------------------------------------ transformers plumbing
    def get_encoder(self, modality=None):
        return self.model.encoder

    def get_decoder(self):
        # PreTrainedModel's lookup finds no `decoder` attribute here and would return the whole model
        return self.model.decoder

    def get_input_embeddings(self):
        return self.model.encoder.embed_tokens

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        """Replace the source embedding table with one of the same shape (the source vocabulary is fixed)."""
        current = self.get_input_embeddings()
        if not isinstance(value, nn.Embedding) or value.weight.shape != current.weight.shape:
            raise ValueError(f"set_input_embeddings takes an nn.Embedding of shape {tuple(current.weight.shape)} "
                             "(source_vocab_size × embedding_size); the vocabularies are fixed")
        self.model.encoder.set_input_embeddings(value)

    def get_output_embeddings(self):
        return None  # the output layer is the lexical head, not a tied embedding matrix

    def resize_token_embeddings(self, *args, **kwargs):
        raise NotImplementedError(
            "the vocabularies are fixed: L, the source embeddings and the output layer are all indexed by them. "
            "Build a new tokenizer (LexicalTokenizer.from_texts / from_dataset) and a new model for new words"
        )

    @classmethod
    def _from_config(cls, config, **kwargs):
        """`AutoModelForSeq2SeqLM.from_config`: new weights, so L is the uniform placeholder whatever lexicon the
        config describes; its `lexicon_info` is dropped so that the model says no lexicon was set (and a save does
        not claim one)."""
        config = copy.deepcopy(config)
        config.lexicon_info = None
        config.lexicon_temperature = 0.0
        return super()._from_config(config, **kwargs)

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        # The decoder's state is its own (LSTMDecoderCache, TransformerDecoderCache): forward creates it. (Should a
        # transformers release stop asking, forward replaces the empty cache generate() made instead.)
        return False

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.LongTensor:
        """Shift labels one step right, starting from the decoder start token (-100 becomes padding)."""
        start = labels.new_full((labels.shape[0], 1), self.config.decoder_start_token_id)
        shifted = torch.cat([start, labels[:, :-1]], 1)
        return shifted.masked_fill(shifted == -100, self.config.pad_token_id)

    # ------------------------------------------------------------------ forward
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: LexicalEncoderOutput | None = None,
        cache: DecoderCache | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        num_items_in_batch: int | torch.Tensor | None = None,
        past_key_values: DecoderCache | None = None,
        **kwargs,
    ) -> LexicalSeq2SeqLMOutput | tuple:
        r"""Teacher-forced scoring (with `labels` or `decoder_input_ids`) or one cached decoding step.

        Args:
            input_ids: (B, S) source ids, right-padded, each sequence non-empty.
            attention_mask: (B, S) 1 for real source tokens. Defaults to `input_ids != pad_token_id`.
            decoder_input_ids: (B, T) target-side inputs; built from `labels` when omitted.
            encoder_outputs: a previous encoder output (generation reuses it).
            cache: the decoder state after the tokens already consumed; `decoder_input_ids` then holds only the
                new tokens. `past_key_values` is the same argument under its name before transformers 5.24.
            labels: (B, T) target ids; -100 positions are ignored by the loss.
            num_items_in_batch: what the summed loss is divided by instead of this batch's own token (or sequence)
                count: `Trainer` passes the count over all micro-batches of a gradient-accumulation step.
        """
        if past_key_values is not None:
            if cache is not None:
                raise ValueError("pass the decoder state once, as `cache` (or `past_key_values`), not both")
            cache = past_key_values
        if cache is not None and not isinstance(cache, DecoderCache):
            # generate() gives a transformers key/value cache to models that do not opt out, and the opt-out is a
            # private hook (`_supports_default_dynamic_cache`): an empty one is "no state yet"; our state replaces it
            if cache.get_seq_length():
                raise TypeError(f"`cache` must be the decoder's own state (a {self.model.__class__.__name__} "
                                f"DecoderCache), not a {type(cache).__name__} that already holds tokens")
            cache = None
        # Inside a graph (torch.compile, CUDA graph capture) the checks below would need host reads: the training
        # pipeline's data collator runs them on the host (`check_inputs`).
        checking = not in_graph()
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        use_cache = use_cache and (checking or labels is None)  # a compiled training step returns no decoder state
        output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
        output_hidden_states = output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        if labels is not None:
            if checking:
                self._check_labels(labels)
            if decoder_input_ids is None:
                decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
        if decoder_input_ids is None:
            raise ValueError("forward needs `decoder_input_ids` or `labels`")
        if checking:
            self._check_decoder_input_ids(decoder_input_ids)

        if encoder_outputs is not None and not isinstance(encoder_outputs, LexicalEncoderOutput):
            raise TypeError(
                f"encoder_outputs must be the encoder's LexicalEncoderOutput (model.get_encoder()(input_ids, "
                f"attention_mask)), not a {type(encoder_outputs).__name__}: the lexicon needs its source_ids"
            )
        if encoder_outputs is None:
            if input_ids is None:
                raise ValueError("forward needs `input_ids` (or precomputed `encoder_outputs`)")
            encoder_outputs = self.model.encoder(  # validates the source (check_source)
                input_ids, attention_mask, output_attentions=output_attentions, output_hidden_states=output_hidden_states)
        if attention_mask is None:
            attention_mask = encoder_outputs.source_ids.ne(self.config.pad_token_id)

        if checking and labels is None and torch.is_grad_enabled() and (num_items_in_batch is not None or self.training):
            # a training forward without labels (generate() runs without gradients, in either mode): the loss is
            # computed outside, from `logits` (Trainer's label_smoothing_factor or compute_loss_func; Trainer passes
            # a label count only when accepts_loss_kwargs, i.e. with loss_normalization="tokens")
            logger.warning_once(
                "The loss is computed outside the model from `logits`, which are log-probabilities with -inf on the "
                "ids the model never generates (padding, decoder start): Trainer's label_smoothing_factor sums over "
                "them and gives an infinite loss (logged as 0). Leave label_smoothing_factor at 0."
            )
        target_lengths = None
        if labels is not None:  # a recurrent decoder need not run a row past its last label (labels are right-padded)
            positions = torch.arange(1, labels.shape[1] + 1, device=labels.device)
            target_lengths = (labels.ne(-100) * positions).amax(1)
        features, gate_features, attention, cache = self.model.decoder(
            decoder_input_ids, encoder_outputs, attention_mask, cache, target_lengths=target_lengths
        )
        if checking:
            self._warn_if_lexicon_unset()
        head = self.lexical_head(features, gate_features, attention, encoder_outputs.source_ids)

        log_probs = head.log_probs
        if labels is None:  # decoding (generate(), with or without a cache); a NaN in training is an error below
            log_probs = self._end_diverged_hypotheses(log_probs)
        loss = None
        if labels is not None:
            summed = F.nll_loss(log_probs.flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum")
            if num_items_in_batch is None:
                per_sequence = self.config.loss_normalization == "sequences"
                num_items_in_batch = labels.shape[0] if per_sequence else labels.ne(-100).sum()
                if checking and not labels.ne(-100).any():
                    raise ValueError("every label is -100 (ignored): the batch has no target token to score")
            loss = summed / num_items_in_batch
            if checking and not torch.isfinite(loss):
                raise FloatingPointError(
                    f"non-finite loss ({loss.item()}): check the learning rate, the inputs, and that no label is a "
                    "token the head can never produce"
                )
        output = LexicalSeq2SeqLMOutput(
            loss=loss,
            logits=log_probs,
            gate=head.gate,
            cross_attentions=(attention,),
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
            encoder_hidden_states=encoder_outputs.hidden_states if output_hidden_states else None,
            encoder_attentions=encoder_outputs.attentions if output_attentions else None,
            decoder_hidden_states=(features,) if output_hidden_states else None,
            **{CACHE_NAME: cache if use_cache else None},
        )
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        return output if return_dict else output.to_tuple()  # the fields that are set, in order (loss first)

    def _end_diverged_hypotheses(self, log_probs: torch.Tensor) -> torch.Tensor:
        """In a decode far longer than anything seen in training, a decoder state can overflow (with
        `combine_decoder_input` the fed-back vector is unsquashed). NaN scores would poison every hypothesis of beam
        search; instead a NaN row becomes "end of sequence with probability 1", so that hypothesis just ends."""
        diverged = torch.isnan(log_probs).any(-1)
        if not in_graph():
            if not diverged.any():
                return log_probs
            logger.warning_once(
                "decoder state overflowed in a long decode (NaN scores); those hypotheses are ended with </s>. "
                "Cap the length with max_new_tokens if this happens within the lengths you need."
            )
        ended = torch.full_like(log_probs, float("-inf"))
        ended[..., self.config.eos_token_id] = 0.0
        return torch.where(diverged.unsqueeze(-1), ended, log_probs)

    def check_inputs(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                     labels: torch.Tensor | None = None, decoder_input_ids: torch.Tensor | None = None) -> None:
        """Every check `forward` runs on its inputs, on their own: what a data collator calls on the host for a model
        whose `forward` runs compiled (where the checks are skipped). Raises `ValueError` like `forward`."""
        check_source(input_ids, attention_mask, self.config.pad_token_id, self.config.source_vocab_size)
        if labels is not None:
            self._check_labels(labels)
            if not labels.ne(-100).any():
                raise ValueError("every label is -100 (ignored): the batch has no target token to score")
        if decoder_input_ids is not None:
            self._check_decoder_input_ids(decoder_input_ids)

    def _check_decoder_input_ids(self, decoder_input_ids: torch.Tensor) -> None:
        if decoder_input_ids.numel() and (decoder_input_ids.min() < 0
                                          or decoder_input_ids.max() >= self.config.target_vocab_size):
            raise ValueError(f"decoder_input_ids must be in [0, {self.config.target_vocab_size}) (target_vocab_size), got "
                             f"min {decoder_input_ids.min().item()} max {decoder_input_ids.max().item()}: target ids "
                             "come from the tokenizer's target side (text_target=...)")

    def _check_labels(self, labels: torch.Tensor) -> None:
        real = labels[labels != -100]
        if real.numel() and (real.min() < 0 or real.max() >= self.config.target_vocab_size):
            raise ValueError(
                f"labels must be -100 or in [0, {self.config.target_vocab_size}) (target_vocab_size), "
                f"got min {real.min().item()} max {real.max().item()}"
            )
        blocked = torch.isin(real, torch.tensor(self.config.non_generatable_token_ids, device=labels.device))
        if blocked.any():
            raise ValueError(
                f"labels contain ids {sorted(set(real[blocked].tolist()))} that the model never generates (padding / "
                "decoder start): pad labels with -100 (DataCollatorForSeq2Seq does this)"
            )
        if self.config.mixture_normalization == "code" and (real == self.config.unk_token_id).any():
            raise ValueError(
                f"labels contain <unk> (id {self.config.unk_token_id}), a target word outside the target vocabulary, "
                "which mixture_normalization='code' gives no probability (as the paper's code does): such targets "
                "cannot be scored; use mixture_normalization='paper'"
            )

    def _warn_if_lexicon_unset(self) -> None:
        if self.lexical_head.uses_lexicon and self.config.lexicon_info is None:
            logger.warning_once(
                f"lexical_mode={self.config.lexical_mode!r} but no lexicon was set: L is uniform. Call "
                "model.set_lexicon(lexicon, tokenizer) before training."
            )

    # ------------------------------------------------------------------ generation glue
    def prepare_inputs_for_generation(self, input_ids, cache=None, attention_mask=None, past_key_values=None, **kwargs):
        """Feed only the tokens the cached decoder state has not consumed yet (all of them without a cache), and pass
        every other model keyword but `labels` on to `forward`, as transformers' default does. generate() passes the
        state as `cache` (transformers >= 5.24) or `past_key_values` (earlier)."""
        cache = cache if cache is not None else past_key_values
        if cache is not None:
            input_ids = input_ids[:, cache.get_seq_length() :]
        passed_on = {key: value for key, value in kwargs.items() if key not in ("labels", "next_sequence_length")}
        return {**passed_on, "decoder_input_ids": input_ids, CACHE_NAME: cache, "attention_mask": attention_mask}

    def generate(self, *args, **kwargs):
        """`GenerationMixin.generate`, with three differences.

        * ``<unk>`` stays suppressed while L has abstaining rows (see `set_lexicon`), even when the call passes its
          own ``suppress_tokens`` or ``generation_config``: the abstaining rows put their mass on ``<unk>``, which
          must never come out as a word.
        * Assisted and prompt-lookup decoding are refused: they roll the decoder state back to an earlier token,
          and the backbones' states (a recurrent state, a key/value list) keep no history to roll back to.
        * ``num_beams`` and ``num_return_sequences`` must be positive integers (a clear error instead of a division
          by zero deep inside beam search).

        The model's cap is ``generation_config.max_new_tokens`` (``config.max_decode_length``); a call's own
        ``max_new_tokens`` or ``max_length`` replaces it.

        `input_ids` are only checked to lie in the source vocabulary: ids from a tokenizer with the same sizes but
        other words decode garbage without an error. Encode with the tokenizer saved beside the model, or call
        `lexical_hf.decoding.generate_texts`, which checks the tokenizer's fingerprint first.
        """
        generation_config = kwargs.get("generation_config") or self.generation_config
        assisted = [name for name in ("assistant_model", "prompt_lookup_num_tokens", "assistant_early_exit", "use_mtp")
                    if kwargs.get(name) not in (None, False) or getattr(generation_config, name, None) not in (None, False)]
        if assisted:
            raise ValueError(f"{', '.join(assisted)}: assisted and prompt-lookup decoding need a decoder state that can "
                             "be cropped back to an earlier token, which this model's is not; use greedy or beam search")
        for name in ("num_beams", "num_return_sequences"):
            value = kwargs.get(name, getattr(generation_config, name, None))
            if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if kwargs.get("max_length") is not None and kwargs.get("max_new_tokens") is None:
            kwargs["max_new_tokens"] = None  # a call's own max_length (Seq2SeqTrainer's) replaces the default cap
        if (self.config.lexicon_info or {}).get("abstains"):
            suppressed = kwargs.get("suppress_tokens") or generation_config.suppress_tokens or []
            kwargs["suppress_tokens"] = sorted({*suppressed, self.config.unk_token_id})
        with self.model.generation_context():  # e.g. the LSTM merges its step weights once per generate()
            return super().generate(*args, **kwargs)

    # ------------------------------------------------------------------ the lexicon
    def set_lexicon(self, lexicon, tokenizer=None) -> None:
        """Store L in the weights.

        Args:
            lexicon: a `lexical_hf.Lexicon` (then `tokenizer` is required and L = `lexicon.to_matrix(tokenizer)`,
                with the temperature recorded in the lexicon) or a (|V_x|, |V_y|) row-stochastic tensor.
            tokenizer: the `LexicalTokenizer` whose vocabularies index L. Its fingerprint is recorded
                (``config.vocabulary_sha256``); a tokenizer with other vocabularies is refused from then on
                (`check_tokenizer`).

        Rows that abstain (inputs without entries under the ``"mutual_exclusivity_or_abstain"`` fallback, and the
        source ``<s>`` of a ``source_bos`` tokenizer) put their mass on ``<unk>``; ``<unk>`` is then added to
        ``generation_config.suppress_tokens`` so that it is never generated, and removed again when a lexicon
        without abstaining rows (or a tensor) replaces it. For a tensor, ``config.lexicon_info`` is
        ``{"source": "matrix"}``, ``config.lexicon_temperature`` is 0 (unknown) and ``model.lexicon`` is None.
        """
        if not (isinstance(lexicon, torch.Tensor) or hasattr(lexicon, "to_matrix")):
            raise TypeError(f"set_lexicon takes a lexical_hf.Lexicon (with the tokenizer) or a (|V_x|, |V_y|) tensor, "
                            f"got a {type(lexicon).__name__}; a dict of entries becomes a Lexicon with "
                            "lexical_hf.Lexicon(entries)")
        if isinstance(lexicon, torch.Tensor):
            self.lexical_head.set_lexicon(lexicon)
            self._suppress_unk(False)
            self.config.lexicon_info = {"source": "matrix"}
            self.config.lexicon_temperature = 0.0
            self.lexicon = None
            return
        if tokenizer is None:
            raise ValueError("set_lexicon(Lexicon, tokenizer): the tokenizer is needed to index the lexicon")
        self.check_tokenizer(tokenizer)
        self.lexical_head.set_lexicon(lexicon.to_matrix(tokenizer))
        # abstaining rows (the fallback's, and the source <s>'s) send their mass to <unk>: it must never be generated
        # (the paper's code masks it too)
        abstains = lexicon.fallback == "mutual_exclusivity_or_abstain" or bool(getattr(tokenizer, "source_bos", False))
        self._suppress_unk(abstains)
        self.config.lexicon_info = {**lexicon.config_summary(), "abstains": abstains}
        self.config.lexicon_temperature = float(self.config.lexicon_info.get("temperature", 0.0) or 0.0)
        self.config.vocabulary_sha256 = tokenizer.vocabulary_sha256
        self.lexicon = lexicon

    def _apply_generation_defaults(self, generation_config: GenerationConfig) -> None:
        """What the config says about decoding: at most `max_decode_length` new tokens (as `max_new_tokens`, so a
        call's own `max_new_tokens` replaces it without transformers' "both were set" warning), and ``<unk>``
        suppressed while L has abstaining rows."""
        generation_config.max_new_tokens = self.config.max_decode_length
        generation_config.max_length = None
        if (self.config.lexicon_info or {}).get("abstains"):
            generation_config.suppress_tokens = sorted({*(generation_config.suppress_tokens or []), self.config.unk_token_id})

    def _reconcile_generation_config(self, pretrained_model_name_or_path, revision, hub_kwargs, cap_changed: bool):
        """After loading: a folder without a readable ``generation_config.json`` (deleted, truncated) would decode with
        transformers' defaults (20 tokens, no ``<unk>`` ban); it is rebuilt from the config instead, with a warning.
        Folders saved before the cap was stored as ``max_new_tokens`` (``max_length = max_decode_length + 1``) get
        the same defaults; a ``max_decode_length`` given to `from_pretrained` replaces the saved cap."""
        readable = _read_json(_generation_config_file(pretrained_model_name_or_path, revision, hub_kwargs))
        older_save = readable is not None and readable.get("max_new_tokens") is None and \
            readable.get("max_length") == self.config.max_decode_length + 1
        if readable is None:
            logger.warning(f"{pretrained_model_name_or_path}: no readable generation_config.json; decoding settings are "
                           f"rebuilt from the config (max_new_tokens={self.config.max_decode_length}"
                           f"{', <unk> suppressed' if (self.config.lexicon_info or {}).get('abstains') else ''})")
            self.generation_config = GenerationConfig.from_model_config(self.config)
        if readable is None or older_save or cap_changed:
            self._apply_generation_defaults(self.generation_config)

    def _suppress_unk(self, abstains: bool) -> None:
        """Keep ``<unk>`` in ``generation_config.suppress_tokens`` exactly while L has abstaining rows."""
        unk_id = self.config.unk_token_id
        suppressed = set(self.generation_config.suppress_tokens or [])
        if abstains:
            suppressed.add(unk_id)
        elif (self.config.lexicon_info or {}).get("abstains"):  # only undo what an earlier set_lexicon did
            suppressed.discard(unk_id)
        self.generation_config.suppress_tokens = sorted(suppressed) or None

    def check_tokenizer(self, tokenizer) -> None:
        """Raise `ValueError` unless `tokenizer`'s ids are the ones this model was built with: the config's
        vocabulary sizes, and the recorded fingerprint ``config.vocabulary_sha256`` when there is one. A tokenizer
        rebuilt from other data can have the same sizes and other ids, which would silently permute L and the
        embeddings."""
        sizes = (tokenizer.source_vocab_size, tokenizer.target_vocab_size)
        if sizes != (self.config.source_vocab_size, self.config.target_vocab_size):
            raise ValueError(
                f"tokenizer vocabularies {sizes} do not match the model's "
                f"({self.config.source_vocab_size}, {self.config.target_vocab_size})"
            )
        recorded = self.config.vocabulary_sha256
        fingerprint = getattr(tokenizer, "vocabulary_sha256", None)
        if recorded is not None and fingerprint is not None and fingerprint != recorded:
            raise ValueError(
                "this tokenizer's vocabularies differ from the ones the model was built with (same sizes, other "
                f"tokens or ids: fingerprint {fingerprint[:12]} against the model's {recorded[:12]}); load the "
                "tokenizer saved with the model (AutoTokenizer.from_pretrained(<the model's folder>))"
            )

    def save_pretrained(self, save_directory, *args, push_to_hub: bool = False, **kwargs):
        """Save weights, config and generation config, plus `lexicon.json` when the model carries a `Lexicon`, and
        `weights_sha256.json`, the sha256 of each weight file, which `from_pretrained` checks.

        Files are written to a staging folder inside `save_directory` and moved into place one by one with
        `os.replace`, so an interrupted save never leaves a truncated file over a good one. With
        `push_to_hub=True` the folder is then pushed with `push_to_hub(repo_id=..., token=..., private=...)`.
        """
        hub_kwargs = {key: kwargs.pop(key) for key in ("repo_id", "token", "private", "commit_message") if key in kwargs}
        if not kwargs.get("is_main_process", True):
            return None
        os.makedirs(save_directory, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=save_directory, prefix=".staging-") as staging:
            super().save_pretrained(staging, *args, **kwargs)
            digests = {name: sha256_of_file(os.path.join(staging, name)) for name in sorted(os.listdir(staging))
                       if _WEIGHT_FILE.fullmatch(name)}
            with open(os.path.join(staging, WEIGHTS_DIGEST_FILE), "w", encoding="utf-8") as file:
                json.dump(digests, file, indent=1)
            if self.lexicon is not None:
                self.lexicon.save_pretrained(staging)
            written = sorted(os.listdir(staging))
            for name in written:
                os.replace(os.path.join(staging, name), os.path.join(save_directory, name))
        for name in set(os.listdir(save_directory)) - set(written):
            if _WEIGHT_FILE.fullmatch(name):  # an earlier save's shards (or single file): they are not these weights
                os.remove(os.path.join(save_directory, name))
        stale_lexicon = os.path.join(save_directory, LEXICON_FILE)
        if self.lexicon is None and os.path.isfile(stale_lexicon):
            os.remove(stale_lexicon)  # an earlier save's lexicon.json would describe another L than these weights
        if push_to_hub:
            repo_id = hub_kwargs.pop("repo_id", os.path.basename(os.path.abspath(save_directory)))
            self.push_to_hub(repo_id, **hub_kwargs)
        return None

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        """Load strictly: a checkpoint with missing, unexpected or mis-shaped weights is an error, never a silently
        re-initialised model (transformers' default only warns), and so is a weight file whose bytes differ from the
        sha256 recorded at save (`weights_sha256.json`; folders saved without one are not checked). `lexicon.json`
        is attached when present, from the same folder or the same Hub revision as the weights."""
        wants_info = kwargs.pop("output_loading_info", False)
        hub_kwargs = {k: kwargs[k] for k in ("cache_dir", "token", "local_files_only", "force_download", "proxies", "subfolder") if k in kwargs}
        revision = kwargs.pop("revision", None)
        if not os.path.isdir(str(pretrained_model_name_or_path)):
            # pin one commit so the weights and lexicon.json come from the same revision
            revision = pinned_revision(
                pretrained_model_name_or_path, revision, token=hub_kwargs.get("token"),
                local_files_only=hub_kwargs.get("local_files_only", False), cache_dir=hub_kwargs.get("cache_dir"),
            )
        if revision is not None:
            kwargs["revision"] = revision
        if os.path.isdir(str(pretrained_model_name_or_path)):  # a damaged local file is refused before it is parsed
            _check_weight_digests(pretrained_model_name_or_path, revision, hub_kwargs)
        try:
            model, info = super().from_pretrained(
                pretrained_model_name_or_path, *args, output_loading_info=True, **kwargs
            )
        except SafetensorError as error:
            raise OSError(f"corrupt or truncated weights in {pretrained_model_name_or_path!r}: {error}") from error
        # info[key], not info.get(key): a renamed key must fail here, not silently skip the strict check
        problems = {key: sorted(map(str, info[key] or [])) for key in ("missing_keys", "unexpected_keys", "mismatched_keys")}
        problems = {key: value for key, value in problems.items() if value}
        if problems:
            raise ValueError(f"checkpoint {pretrained_model_name_or_path!r} does not match the model: {problems}")
        if not os.path.isdir(str(pretrained_model_name_or_path)):  # the files transformers just downloaded
            _check_weight_digests(pretrained_model_name_or_path, revision, hub_kwargs)
        model._reconcile_generation_config(pretrained_model_name_or_path, revision, hub_kwargs,
                                           cap_changed="max_decode_length" in kwargs)
        lexicon_path = _lexicon_file(pretrained_model_name_or_path, revision, hub_kwargs)
        if lexicon_path is not None:
            model.lexicon = _lexicon_describing(model.config, lexicon_path)
        return (model, info) if wants_info else model


_WEIGHT_FILE = re.compile(r"model(-\d+-of-\d+)?\.safetensors(\.index\.json)?")
WEIGHTS_DIGEST_FILE = "weights_sha256.json"


def _check_weight_digests(pretrained_model_name_or_path, revision, hub_kwargs) -> None:
    """Raise `OSError` when a weight file differs from the sha256 recorded beside it at save: flipped or truncated
    bytes under an intact header would otherwise load as a silently different model."""
    recorded = _read_json(_file_beside_weights(pretrained_model_name_or_path, WEIGHTS_DIGEST_FILE, revision, hub_kwargs))
    for name, expected in (recorded or {}).items():
        path = _file_beside_weights(pretrained_model_name_or_path, name, revision, hub_kwargs)
        if path is None:
            raise OSError(f"{pretrained_model_name_or_path}: {name}, listed in {WEIGHTS_DIGEST_FILE}, is missing")
        if sha256_of_file(path) != expected:
            raise OSError(f"{path} differs from the sha256 recorded when it was saved ({WEIGHTS_DIGEST_FILE}): the file "
                          "is damaged or truncated; save or download the model again")


def _lexicon_describing(config: LexicalSeq2SeqConfig, lexicon_path: str):
    """The `Lexicon` in `lexicon_path` when it is the one L was built from, else None (with a warning): the weights
    hold L, the file is its readable description. A file that is not a lexicon is an error (a damaged checkpoint)."""
    lexicon = Lexicon.from_pretrained(lexicon_path)
    info = config.lexicon_info or {}
    recorded = info.get("content_sha256")
    if info.get("source") == "matrix" or (recorded is not None and recorded != lexicon.content_sha256()):
        logger.warning(
            f"{lexicon_path} does not describe the L in these weights (they were set from "
            f"{'a tensor' if info.get('source') == 'matrix' else 'another lexicon'}): it is not attached "
            "(model.lexicon is None); the model uses L as saved in its weights"
        )
        return None
    return lexicon


def _lexicon_file(pretrained_model_name_or_path, revision, hub_kwargs) -> str | None:
    return _file_beside_weights(pretrained_model_name_or_path, LEXICON_FILE, revision, hub_kwargs)


def _generation_config_file(pretrained_model_name_or_path, revision, hub_kwargs) -> str | None:
    return _file_beside_weights(pretrained_model_name_or_path, "generation_config.json", revision, hub_kwargs)


def _read_json(path: str | None) -> dict | None:
    """The JSON object in `path`, or None when there is no such file or it is not a JSON object (e.g. truncated)."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as file:
            value = json.load(file)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _file_beside_weights(pretrained_model_name_or_path, filename: str, revision, hub_kwargs) -> str | None:
    """The local path of `filename` beside the weights (same folder, or same Hub revision and subfolder), or None
    when there is none. Public huggingface_hub calls only: transformers' `cached_file` answers None for a missing
    file only through private flags, and silently ignores flags it no longer knows (it would then raise)."""
    subfolder = hub_kwargs.get("subfolder") or ""
    if os.path.isdir(str(pretrained_model_name_or_path)):
        path = os.path.join(str(pretrained_model_name_or_path), subfolder, filename)
        return path if os.path.isfile(path) else None
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        return hf_hub_download(
            str(pretrained_model_name_or_path), filename, subfolder=subfolder or None, revision=revision,
            cache_dir=hub_kwargs.get("cache_dir"), token=hub_kwargs.get("token"),
            local_files_only=hub_kwargs.get("local_files_only", False),
            force_download=hub_kwargs.get("force_download", False),
        )
    except EntryNotFoundError:  # no such file in the repository (offline and not cached: LocalEntryNotFoundError)
        return None


__all__ = [
    "LexicalSeq2SeqForConditionalGeneration",
    "LexicalSeq2SeqLMOutput",
    "LexicalSeq2SeqPreTrainedModel",
]
