"""Transformer encoder–decoder backbone: the same (h_i, α_i) interface as the LSTM, so the lexical head is unchanged.

The paper notes that the mechanism "could be easily integrated with CNNs or transformers: we only assume access to a
final layer h_i and final attention weights α_i". Here:

* h_i (the head's `features` and `gate_features`) is the decoder's final state: the output of the last decoder layer,
  after the final LayerNorm with pre-norm (`norm_first=True`).
* α_i (the head's `attention`) comes from one of two places (`config.attention_source`):

  - ``"cross_attention_mean"``: the last decoder layer's cross-attention weights, averaged over heads. Each head's
    weights are a softmax over the unmasked source positions, so their mean is too. Taken before attention dropout.
  - ``"dedicated_head"``: α_i^j ∝ exp((W_q h_i)·(W_k e_j) / √d), a separate single-head attention from the final
    decoder state over the encoder outputs e_j. Only the lexical head reads it; the decoder never sees its context,
    so it is free to become the sharp word-alignment the lexicon needs while the cross-attention heads do whatever
    helps p_write.

Layers (d = `hidden_size`, h = `num_attention_heads`, d_h = d / h, F = `ffn_size`)::

    encoder layer:  x ← x + Dropout(SelfAttention(LN(x)))        (pre-norm; post-norm is LN(x + Dropout(...)))
                    x ← x + Dropout(FFN(LN(x)))                  FFN(x) = W_2 Dropout(ReLU(W_1 x))
    decoder layer:  y ← y + Dropout(CausalSelfAttention(LN(y)))
                    y ← y + Dropout(CrossAttention(LN(y), memory))
                    y ← y + Dropout(FFN(LN(y)))

Positions (`config.position_encoding`):

* ``"sinusoidal"``: Vaswani et al. (2017) fixed encodings added to the token embeddings (not saved: recomputed).
* ``"learned"``: a trained table of `max_position_embeddings` vectors added to the token embeddings.
* ``"relative"``: Shaw et al. (2018) clipped relative position representations on the *keys* of every self-attention
  (encoder and decoder; not cross-attention): score_ij = q_i·(k_j + a_{clip(j−i, −k, k)}) / √d_h with one table a of
  2k + 1 vectors of size d_h per attention layer, shared by its heads (k = `relative_attention_max_distance`). No
  absolute position is added anywhere. Relative positions are known to matter for compositional generalisation
  (e.g. Ontañón et al. 2022 on COGS and SCAN).

Decoding cache: `TransformerDecoderCache` holds, per decoder layer, the self-attention keys/values of every target
token consumed so far (B, h, t, d_h) and the cross-attention keys/values of the encoder outputs (B, h, S, d_h),
computed once at the first step (plus the dedicated head's keys). A step with T new tokens attends to the cached
t + T keys; positions continue from t. `reorder_cache` follows beam search's parents, in place. The decoder never
modifies the cache it is given: it returns a new one.

Shapes: B batch, S source length, T new target tokens, t tokens already in the cache.
"""

import math

import torch
from torch import nn
from torch.nn import functional as F

from .common import Backbone, DecoderCache, LexicalEncoderOutput, check_source


class TransformerDecoderCache(DecoderCache):
    """Key/value cache of the Transformer decoder, carried between `generate()` steps.

    Attributes:
        self_keys, self_values: one (B, h, t, d_h) tensor per decoder layer: the self-attention keys/values of the t
            target tokens consumed so far (relative positions are applied to scores, so keys hold no position).
        cross_keys, cross_values: one (B, h, S, d_h) tensor per decoder layer: the projected encoder outputs.
        lexical_keys: (B, S, d) keys of the dedicated α head, or None.
        seq_length: t, the number of target tokens consumed (also the position of the next token).
    """

    def __init__(self, self_keys, self_values, cross_keys, cross_values, lexical_keys=None, seq_length: int = 0):
        self.self_keys, self.self_values = list(self_keys), list(self_values)
        self.cross_keys, self.cross_values = list(cross_keys), list(cross_values)
        self.lexical_keys = lexical_keys
        self.seq_length = seq_length

    @property
    def is_linear(self) -> list[bool]:
        """One entry per layer: keys and values grow with every token consumed."""
        return [False] * len(self.self_keys)

    @staticmethod
    def extend(past: torch.Tensor | None, new: torch.Tensor) -> torch.Tensor:
        """Past keys (or values) followed by the new ones along the time axis: (B, h, t, d_h) + (B, h, T, d_h)."""
        return new if past is None else torch.cat([past, new], dim=2)

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Keep, for every beam, the state of the parent beam search chose (in place)."""
        def select(tensors):
            return [x.index_select(0, beam_idx.to(x.device)) for x in tensors]

        self.self_keys, self.self_values = select(self.self_keys), select(self.self_values)
        self.cross_keys, self.cross_values = select(self.cross_keys), select(self.cross_values)
        if self.lexical_keys is not None:
            self.lexical_keys = self.lexical_keys.index_select(0, beam_idx.to(self.lexical_keys.device))

    def __repr__(self) -> str:
        batch = self.cross_keys[0].shape[0] if self.cross_keys else 0
        return f"TransformerDecoderCache(layers={len(self.cross_keys)}, batch={batch}, seq_length={self.seq_length})"


def sinusoidal_positions(positions: torch.Tensor, size: int) -> torch.Tensor:
    """(L,) integer positions → (L, size) Vaswani et al. encodings: sin on even dimensions, cos on odd ones."""
    frequencies = torch.exp(torch.arange(0, size, 2, device=positions.device, dtype=torch.float32)
                            * (-math.log(10000.0) / size))
    angles = positions.float()[:, None] * frequencies[None, :]  # (L, ceil(size / 2))
    encoding = torch.zeros(positions.shape[0], size, device=positions.device)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles[:, : size // 2])
    return encoding


class TransformerEmbedding(nn.Module):
    """Token embedding (projected to d_model when `embedding_size` differs) + absolute positions + dropout.

    `embed_tokens` is N(0, 1)-initialised (PyTorch's default), the same scale as Vaswani et al.'s √d-scaled
    N(0, 1/d) embeddings, so no √d factor is applied."""

    def __init__(self, config, vocab_size: int):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, config.embedding_size, config.pad_token_id)
        self.projection = (
            nn.Linear(config.embedding_size, config.hidden_size, bias=False)
            if config.embedding_size != config.hidden_size else nn.Identity()
        )
        self.position_encoding = config.position_encoding
        self.max_positions = config.max_position_embeddings
        self.hidden_size = config.hidden_size
        self.positions = (
            nn.Embedding(config.max_position_embeddings, config.hidden_size)
            if config.position_encoding == "learned" else None
        )
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, ids: torch.LongTensor, positions: torch.LongTensor) -> torch.Tensor:
        """ids (B, L), positions (L,) → (B, L, d)."""
        x = self.projection(self.embed_tokens(ids))
        if self.position_encoding == "sinusoidal":
            x = x + sinusoidal_positions(positions, self.hidden_size).to(x.dtype)
        elif self.position_encoding == "learned":
            if positions.numel() and int(positions[-1]) >= self.max_positions:
                raise ValueError(
                    f"sequence position {int(positions[-1])} exceeds max_position_embeddings={self.max_positions} "
                    "(learned positions): use a larger table or position_encoding='sinusoidal' / 'relative'"
                )
            x = x + self.positions(positions)
        return self.dropout(x)


class MultiHeadAttention(nn.Module):
    """Scaled dot-product attention with h heads, optionally with Shaw et al. (2018) relative keys.

    The key/value projection is a separate method so that the decoder can cache its result."""

    def __init__(self, config, relative: bool = False):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_size = config.hidden_size // config.num_attention_heads
        d = config.hidden_size
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)
        self.output = nn.Linear(d, d)
        self.dropout = nn.Dropout(config.attention_dropout)
        self.max_distance = config.relative_attention_max_distance
        self.relative_keys = nn.Embedding(2 * self.max_distance + 1, self.head_size) if relative else None

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:  # (B, L, d) → (B, h, L, d_h)
        return x.view(x.shape[0], x.shape[1], self.num_heads, self.head_size).transpose(1, 2)

    def project_key_value(self, states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """states (B, L, d) → keys, values (B, h, L, d_h)."""
        return self._split_heads(self.key(states)), self._split_heads(self.value(states))

    def forward(
        self,
        query_states: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        blocked: torch.Tensor,
        query_positions: torch.Tensor | None = None,
        key_positions: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Attend from query_states (B, Tq, d) to keys/values (B, h, Tk, d_h).

        `blocked` is a boolean mask broadcastable to (B, h, Tq, Tk), True where attention is not allowed; every row
        must keep at least one key. Positions (Tq,), (Tk,) are needed with relative keys.
        Returns the output (B, Tq, d) and the attention weights (B, h, Tq, Tk) before dropout.
        """
        queries = self._split_heads(self.query(query_states))  # (B, h, Tq, d_h)
        scores = queries @ keys.transpose(-1, -2)  # (B, h, Tq, Tk)
        if self.relative_keys is not None:
            distance = (key_positions[None, :] - query_positions[:, None]).clamp(-self.max_distance, self.max_distance)
            relative = self.relative_keys(distance + self.max_distance)  # (Tq, Tk, d_h)
            scores = scores + torch.einsum("bhqd,qkd->bhqk", queries, relative)
        scores = (scores / math.sqrt(self.head_size)).masked_fill(blocked, float("-inf"))
        weights = scores.softmax(-1)
        context = self.dropout(weights) @ values  # (B, h, Tq, d_h)
        context = context.transpose(1, 2).reshape(*query_states.shape[:2], self.num_heads * self.head_size)
        return self.output(context), weights


class FeedForward(nn.Module):
    def __init__(self, config):
        super().__init__()
        inner = config.ffn_size or 4 * config.hidden_size
        self.inner = nn.Linear(config.hidden_size, inner)
        self.outer = nn.Linear(inner, config.hidden_size)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.outer(self.dropout(F.relu(self.inner(x))))


class SublayerNorm(nn.Module):
    """The residual wiring around one sub-layer: pre-norm x + D(f(LN(x))) or post-norm LN(x + D(f(x)))."""

    def __init__(self, config):
        super().__init__()
        self.norm = nn.LayerNorm(config.hidden_size)
        self.dropout = nn.Dropout(config.dropout)
        self.norm_first = config.norm_first

    def before(self, x: torch.Tensor) -> torch.Tensor:
        """The sub-layer's input."""
        return self.norm(x) if self.norm_first else x

    def after(self, x: torch.Tensor, sublayer_output: torch.Tensor) -> torch.Tensor:
        """Add the sub-layer's output to the residual stream."""
        x = x + self.dropout(sublayer_output)
        return x if self.norm_first else self.norm(x)


class TransformerEncoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attention = MultiHeadAttention(config, relative=config.position_encoding == "relative")
        self.self_attention_norm = SublayerNorm(config)
        self.feed_forward = FeedForward(config)
        self.feed_forward_norm = SublayerNorm(config)

    def forward(self, x, blocked, positions):
        """x (B, S, d), blocked (B, 1, 1, S) True on source padding → (B, S, d), weights (B, h, S, S)."""
        inputs = self.self_attention_norm.before(x)
        attended, weights = self.self_attention(inputs, *self.self_attention.project_key_value(inputs), blocked,
                                                positions, positions)
        x = self.self_attention_norm.after(x, attended)
        x = self.feed_forward_norm.after(x, self.feed_forward(self.feed_forward_norm.before(x)))
        return x, weights


class TransformerEncoder(nn.Module):
    main_input_name = "input_ids"

    def __init__(self, config):
        super().__init__()
        self.pad_token_id = config.pad_token_id
        self.source_vocab_size = config.source_vocab_size
        self.embedding = TransformerEmbedding(config, config.source_vocab_size)
        self.layers = nn.ModuleList(TransformerEncoderLayer(config) for _ in range(config.num_layers))
        self.final_norm = nn.LayerNorm(config.hidden_size) if config.norm_first else nn.Identity()

    @property
    def embed_tokens(self) -> nn.Embedding:
        return self.embedding.embed_tokens

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embedding.embed_tokens = value

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        return_dict: bool = True,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        **kwargs,
    ) -> LexicalEncoderOutput:
        """input_ids (B, S), attention_mask (B, S) → encoder states e (B, S, d) (garbage on padding, never read)."""
        attention_mask = check_source(input_ids, attention_mask, self.pad_token_id, self.source_vocab_size)
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        blocked = ~attention_mask.bool()[:, None, None, :]  # (B, 1, 1, S)
        x = self.embedding(input_ids, positions)
        hidden_states, attentions = [x], []
        for layer in self.layers:
            x, weights = layer(x, blocked, positions)
            hidden_states.append(x)
            attentions.append(weights)
        x = self.final_norm(x)
        return LexicalEncoderOutput(
            last_hidden_state=x,
            source_ids=input_ids,
            hidden_states=tuple(hidden_states) if output_hidden_states else None,
            attentions=tuple(attentions) if output_attentions else None,
        )


class TransformerDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attention = MultiHeadAttention(config, relative=config.position_encoding == "relative")
        self.self_attention_norm = SublayerNorm(config)
        self.cross_attention = MultiHeadAttention(config)
        self.cross_attention_norm = SublayerNorm(config)
        self.feed_forward = FeedForward(config)
        self.feed_forward_norm = SublayerNorm(config)

    def forward(self, y, past_keys, past_values, cross_keys, cross_values, causal_blocked, source_blocked,
                query_positions, key_positions):
        """One decoder layer over T new tokens.

        y (B, T, d); past_keys/values (B, h, t, d_h) or None; cross_keys/values (B, h, S, d_h);
        causal_blocked (T, t + T); source_blocked (B, 1, 1, S); positions (T,), (t + T,).
        Returns y (B, T, d), this layer's keys/values for all t + T tokens, cross-attention weights (B, h, T, S).
        """
        inputs = self.self_attention_norm.before(y)
        new_keys, new_values = self.self_attention.project_key_value(inputs)
        keys = TransformerDecoderCache.extend(past_keys, new_keys)
        values = TransformerDecoderCache.extend(past_values, new_values)
        attended, _ = self.self_attention(inputs, keys, values, causal_blocked, query_positions, key_positions)
        y = self.self_attention_norm.after(y, attended)

        attended, cross_weights = self.cross_attention(self.cross_attention_norm.before(y), cross_keys, cross_values,
                                                       source_blocked)
        y = self.cross_attention_norm.after(y, attended)
        y = self.feed_forward_norm.after(y, self.feed_forward(self.feed_forward_norm.before(y)))
        return y, keys, values, cross_weights


class DedicatedAttention(nn.Module):
    """Single-head attention from the final decoder state over the encoder outputs; only the lexical head uses it."""

    def __init__(self, config):
        super().__init__()
        self.query = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.key = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.scale = 1.0 / math.sqrt(config.hidden_size)

    def forward(self, states: torch.Tensor, keys: torch.Tensor, source_padding: torch.Tensor) -> torch.Tensor:
        """states (B, T, d), keys = self.key(memory) (B, S, d), source_padding (B, S) → α (B, T, S)."""
        scores = (self.query(states) @ keys.transpose(1, 2)) * self.scale
        return scores.masked_fill(source_padding[:, None, :], float("-inf")).softmax(-1)


class TransformerDecoder(nn.Module):
    """Causal Transformer decoder with cross-attention; returns (h, h, α, new cache) for the lexical head."""

    def __init__(self, config):
        super().__init__()
        self.embedding = TransformerEmbedding(config, config.target_vocab_size)
        self.layers = nn.ModuleList(TransformerDecoderLayer(config) for _ in range(config.num_layers))
        self.final_norm = nn.LayerNorm(config.hidden_size) if config.norm_first else nn.Identity()
        self.attention_source = config.attention_source
        self.lexical_attention = DedicatedAttention(config) if config.attention_source == "dedicated_head" else None

    @property
    def embed_tokens(self) -> nn.Embedding:
        return self.embedding.embed_tokens

    def initial_cache(self, encoder_outputs: LexicalEncoderOutput) -> TransformerDecoderCache:
        """An empty cache holding the projected encoder outputs (computed once per generate() call)."""
        memory = encoder_outputs.last_hidden_state
        cross = [layer.cross_attention.project_key_value(memory) for layer in self.layers]
        lexical_keys = self.lexical_attention.key(memory) if self.lexical_attention is not None else None
        return TransformerDecoderCache([None] * len(self.layers), [None] * len(self.layers),
                                       [k for k, _ in cross], [v for _, v in cross], lexical_keys, 0)

    def forward(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_outputs: LexicalEncoderOutput,
        attention_mask: torch.Tensor,
        cache: TransformerDecoderCache | None = None,
        target_lengths: torch.Tensor | None = None,
    ):
        """Run the decoder over `decoder_input_ids` (B, T), after the t tokens held by `cache` (none without one).

        Returns `(features (B,T,d), gate_features (B,T,d), attention (B,T,S), cache)`; the cache is a new object
        holding t + T tokens, and the one passed in is not modified. `target_lengths` is accepted for the LSTM
        decoder's interface and unused: all T positions run in parallel, so skipping padded ones would save nothing.
        """
        if cache is None:
            cache = self.initial_cache(encoder_outputs)
        past, new = cache.seq_length, decoder_input_ids.shape[1]
        device = decoder_input_ids.device
        query_positions = torch.arange(past, past + new, device=device)
        key_positions = torch.arange(past + new, device=device)
        causal_blocked = key_positions[None, :] > query_positions[:, None]  # (T, t + T)
        source_padding = ~attention_mask.bool()  # (B, S)
        source_blocked = source_padding[:, None, None, :]

        y = self.embedding(decoder_input_ids, query_positions)
        keys, values = [], []
        for index, layer in enumerate(self.layers):
            y, layer_keys, layer_values, cross_weights = layer(
                y, cache.self_keys[index], cache.self_values[index], cache.cross_keys[index],
                cache.cross_values[index], causal_blocked, source_blocked, query_positions, key_positions,
            )
            keys.append(layer_keys)
            values.append(layer_values)
        y = self.final_norm(y)

        if self.lexical_attention is None:
            attention = cross_weights.mean(1)  # last layer, averaged over heads: (B, T, S)
        else:
            attention = self.lexical_attention(y, cache.lexical_keys, source_padding)
        new_cache = TransformerDecoderCache(keys, values, cache.cross_keys, cache.cross_values, cache.lexical_keys,
                                            past + new)
        return y, y, attention, new_cache


class TransformerEncoderDecoder(Backbone):
    """The backbone: Transformer encoder + decoder. Knows nothing about lexicons."""

    display_name = "Transformer"
    config_options = ("num_attention_heads", "ffn_size", "norm_first", "position_encoding", "max_position_embeddings",
                      "relative_attention_max_distance", "attention_source", "attention_dropout")

    @classmethod
    def validate_config(cls, config) -> None:
        if config.num_attention_heads < 1 or config.hidden_size % config.num_attention_heads:
            raise ValueError(f"hidden_size ({config.hidden_size}) must be a multiple of num_attention_heads "
                             f"({config.num_attention_heads})")
        if config.ffn_size is not None and config.ffn_size < 1:
            raise ValueError(f"ffn_size must be positive (or None for 4 × hidden_size), got {config.ffn_size}")
        for name in ("max_position_embeddings", "relative_attention_max_distance", "num_layers"):
            if getattr(config, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(config, name)}")
        if config.position_encoding == "learned" and config.max_position_embeddings < config.max_decode_length + 1:
            # generate() runs to max_decode_length + 1 positions (decoder start included): fail here, not mid-batch
            raise ValueError(
                f"max_position_embeddings ({config.max_position_embeddings}) must cover max_decode_length + 1 "
                f"({config.max_decode_length + 1}) target positions with position_encoding='learned'"
            )

    def __init__(self, config):
        super().__init__()
        self.encoder = TransformerEncoder(config)
        self.decoder = TransformerDecoder(config)
        self.feature_size = config.hidden_size
        self.gate_feature_size = config.hidden_size
