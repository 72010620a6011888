"""LSTM encoder–decoder with attention and input feeding: the paper's backbone.

Encoder: embeddings → dropout → n-layer LSTM (optionally bidirectional; directions are projected back to the hidden
size for attention and summed for the decoder's initial state, as in the paper's code).

Decoder step i (Luong-style input feeding)::

    h_i      = LSTM([emb(y_{i-1}); o_{i-1}], state_{i-1})          o_0 = 0, state_0 = encoder final state
    α_i^j    ∝ exp((W_att h_i)·e_j)                                 (masked on source padding)
    c_i      = Σ_j α_i^j e_j
    o_i      = dropout(W_o [c_i; h_i])                              fed to the next step and to p_write

Three options reproduce details of the paper's public code (all off by default, on in ``run_lexical.py --preset
paper``; see docs/ARCHITECTURE.md):

* ``feed_dropout``: o_i also goes through ``output_dropout`` before it is fed back, and the fed-back o_{i-1} is
  dropped again with the embedding at the LSTM input.
* ``combine_decoder_input``: W_o also reads the step's (dropped) input, o_i = W_o [c_i; h_i; emb(y_{i-1}); o_{i-1}].
* ``attention_query_bias``: the attention query has a bias, score_j = (W_att h_i + b)·e_j.

The head receives features o_i, gate features h_i and α_i. Input feeding makes the decoder sequential in i, so the
step loop runs over target positions (each step handles the whole batch, or with teacher forcing only the rows whose
target is not over yet); everything that does not depend on the recurrence (embeddings, attention keys, the output
projection in the head) is computed once for all steps, and the attention keys once per source in cached decoding.
"""

from contextlib import contextmanager

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .common import Backbone, DecoderCache, LexicalEncoderOutput, check_source
from .recurrence import LSTMWeights, lstm_cell, masked_lstm, static_shapes_active


class LSTMDecoderCache(DecoderCache):
    """Recurrent decoder state carried between `generate()` steps (the LSTM's "KV cache").

    Holds the LSTM hidden and cell states (num_layers, B, H), the input-feeding vector o_{i-1} (B, H), how many
    target tokens have been consumed, and the attention keys W_attᵀ e_j (B, H, S) with the query bias's scores b·e_j
    (B, S) or None: they depend only on the encoder's output, so cached decoding computes them once, not at every
    step. `reorder_cache` follows beam search's choice of parents.
    """

    def __init__(self, hidden: torch.Tensor, cell: torch.Tensor, feed: torch.Tensor, seq_length: int = 0,
                 keys: torch.Tensor | None = None, query_bias_scores: torch.Tensor | None = None):
        self.hidden, self.cell, self.feed, self.seq_length = hidden, cell, feed, seq_length
        self.keys, self.query_bias_scores = keys, query_bias_scores

    @property
    def is_linear(self) -> list[bool]:
        """One entry per layer: the state has a fixed size (it does not grow with the tokens consumed)."""
        return [True] * self.hidden.shape[0]

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self.hidden = self.hidden.index_select(1, beam_idx.to(self.hidden.device))
        self.cell = self.cell.index_select(1, beam_idx.to(self.cell.device))
        self.feed = self.feed.index_select(0, beam_idx.to(self.feed.device))
        if self.keys is not None:
            self.keys = self.keys.index_select(0, beam_idx.to(self.keys.device))
        if self.query_bias_scores is not None:
            self.query_bias_scores = self.query_bias_scores.index_select(0, beam_idx.to(self.query_bias_scores.device))

    def __repr__(self) -> str:
        return f"LSTMDecoderCache(batch={self.feed.shape[0]}, seq_length={self.seq_length})"


class LSTMEncoder(nn.Module):
    main_input_name = "input_ids"

    def __init__(self, config):
        super().__init__()
        self.pad_token_id = config.pad_token_id
        self.source_vocab_size = config.source_vocab_size
        self.num_layers = config.num_layers
        self.directions = 2 if config.bidirectional_encoder else 1
        self.embed_tokens = nn.Embedding(config.source_vocab_size, config.embedding_size, config.pad_token_id)
        self.dropout = nn.Dropout(config.dropout)
        self.lstm = LSTMWeights(
            config.embedding_size,
            config.hidden_size,
            config.num_layers,
            dropout=config.dropout if config.num_layers > 1 else 0.0,
            bidirectional=config.bidirectional_encoder,
        )
        self.direction_projection = (
            nn.Linear(2 * config.hidden_size, config.hidden_size) if config.bidirectional_encoder else nn.Identity()
        )
        self.config = config

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embed_tokens = value

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        return_dict: bool = True,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        **kwargs,
    ) -> LexicalEncoderOutput:
        attention_mask = check_source(input_ids, attention_mask, self.pad_token_id, self.source_vocab_size)
        embedded = self.dropout(self.embed_tokens(input_ids))
        if static_shapes_active(self.config):  # every position, the state frozen on padding: no host sync
            states, hidden, cell = masked_lstm(self.lstm, embedded, attention_mask, self.training)
        else:
            # Packing makes the final state the one after each sequence's last real token, not after padding.
            lengths = attention_mask.sum(-1).cpu()
            packed = pack_padded_sequence(embedded, lengths, batch_first=True, enforce_sorted=False)
            packed_states, (hidden, cell) = self.lstm.packed_forward(packed)
            states, _ = pad_packed_sequence(packed_states, batch_first=True, total_length=input_ids.shape[1])
        states = self.direction_projection(states)

        batch = input_ids.shape[0]
        hidden = hidden.view(self.num_layers, self.directions, batch, -1).sum(1).transpose(0, 1)
        cell = cell.view(self.num_layers, self.directions, batch, -1).sum(1).transpose(0, 1)
        return LexicalEncoderOutput(
            last_hidden_state=states, source_ids=input_ids, final_hidden=hidden, final_cell=cell,
            hidden_states=(states,) if output_hidden_states else None,  # nn.LSTM runs its layers fused
        )


class LSTMAttentionDecoder(nn.Module):
    """Attentional LSTM decoder with input feeding.

    The LSTM's weights live in `LSTMWeights` (`nn.LSTM`'s parameter names and initialisation), but the
    recurrence is computed here, one step at a time, because input feeding makes every step depend on the previous
    step's attention output. Doing it by hand lets the embedding half of layer 0's input projection run once for all
    steps (one large matmul) and merges each layer's remaining input and recurrent projections into one matmul per
    step; `test_lstm_step_matches_torch_lstm` checks the arithmetic against `nn.LSTM`. Merging copies the weights once
    per call: in training that is once per batch, in generation (one call per token) once per `generate()`
    (`reusing_step_weights`).
    """

    def __init__(self, config):
        super().__init__()
        hidden = config.hidden_size
        self.embedding_size = config.embedding_size
        self.num_layers = config.num_layers
        self.embed_tokens = nn.Embedding(config.target_vocab_size, config.embedding_size, config.pad_token_id)
        self.dropout = nn.Dropout(config.dropout)
        self.lstm = LSTMWeights(
            config.embedding_size + hidden,
            hidden,
            config.num_layers,
            dropout=config.dropout if config.num_layers > 1 else 0.0,
        )
        self.attention_query = nn.Linear(hidden, hidden, bias=config.attention_query_bias)  # W_att
        self.combine_decoder_input = config.combine_decoder_input
        # W_o over [c_i; h_i] (the paper's equation), or over [c_i; h_i; emb(y_{i-1}); o_{i-1}] (its code)
        combine_inputs = 2 * hidden + (config.embedding_size + hidden if config.combine_decoder_input else 0)
        self.combine = nn.Linear(combine_inputs, hidden)
        self.feed_dropout = config.feed_dropout
        self.output_dropout = nn.Dropout(config.output_dropout if config.feed_dropout else 0.0)
        self._reuse_step_weights, self._merged = False, None  # see reusing_step_weights
        self.config = config

    def initial_cache(self, encoder_outputs: LexicalEncoderOutput) -> LSTMDecoderCache:
        hidden = encoder_outputs.final_hidden.transpose(0, 1).contiguous()
        cell = encoder_outputs.final_cell.transpose(0, 1).contiguous()
        feed = hidden.new_zeros(hidden.shape[1], hidden.shape[2])
        memory = encoder_outputs.last_hidden_state  # (B, S, H)
        # score_j = (W_att h)·e_j = h·(W_attᵀ e_j): project the memory once instead of the query at every step.
        keys = (memory @ self.attention_query.weight).transpose(1, 2)  # (B, H, S)
        # the query bias adds b·e_j to every step's scores: one (B, S) term
        query_bias_scores = memory @ self.attention_query.bias if self.attention_query.bias is not None else None
        return LSTMDecoderCache(hidden, cell, feed, 0, keys, query_bias_scores)

    def _layer_weights(self, layer: int):
        """(input weight for the embedding part or None, merged [input | recurrent] weight, summed bias)."""
        w_ih, w_hh = getattr(self.lstm, f"weight_ih_l{layer}"), getattr(self.lstm, f"weight_hh_l{layer}")
        bias = getattr(self.lstm, f"bias_ih_l{layer}") + getattr(self.lstm, f"bias_hh_l{layer}")
        if layer == 0:  # input = [embedding; feed]: the embedding part is projected for all steps at once
            return w_ih[:, : self.embedding_size], torch.cat([w_ih[:, self.embedding_size :], w_hh], 1), bias
        return None, torch.cat([w_ih, w_hh], 1), bias

    @contextmanager
    def reusing_step_weights(self):
        """Inside, calls without gradients merge the weights (`_step_weights`) once and reuse them. The model's
        `generate()` runs in it: a cached decode calls the decoder once per token with fixed weights, and merging
        copies about 8 MB per layer at 2×512, more than a step's arithmetic at small batches."""
        self._reuse_step_weights, self._merged = True, None
        try:
            yield
        finally:
            self._reuse_step_weights, self._merged = False, None

    def _step_weights(self):
        """The per-layer `_layer_weights` and W_o without its embedding part ([c_i; h_i; o_{i-1}] with
        `combine_decoder_input`)."""
        if not (self._reuse_step_weights and not torch.is_grad_enabled()):
            return self._merge_step_weights()
        if self._merged is None:
            self._merged = self._merge_step_weights()
        return self._merged

    def _merge_step_weights(self):
        w_combine = self.combine.weight
        if self.combine_decoder_input:
            start = 2 * self.lstm.hidden_size
            w_combine = torch.cat([w_combine[:, :start], w_combine[:, start + self.embedding_size :]], 1)
        return [self._layer_weights(layer) for layer in range(self.num_layers)], w_combine

    @staticmethod
    def _step(known_gates: torch.Tensor, inputs: torch.Tensor, weight: torch.Tensor, cell: torch.Tensor):
        """One layer's LSTM step: gates = known_gates + inputs @ weightᵀ (one `addmm`), then the cell."""
        return lstm_cell(torch.addmm(known_gates, inputs, weight.t()), cell)

    def forward(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_outputs: LexicalEncoderOutput,
        attention_mask: torch.Tensor,
        cache: LSTMDecoderCache | None = None,
        target_lengths: torch.Tensor | None = None,
    ):
        """Run the decoder over `decoder_input_ids` (B, T) starting from `cache` (or the encoder's final state).

        `target_lengths` (B,), optional: row b needs only its first `target_lengths[b]` steps (teacher forcing on
        right-padded labels). The rows are then sorted by length and step i runs only on the rows still active, like
        a PackedSequence: a batch costs its mean target length in steps, not its longest. Positions past a row's
        length are not computed: their features and gate features are zeros, their attention is spread evenly over the
        source tokens, and the returned cache holds each row's state after its own last step. Without it every row
        runs all T steps.

        Returns `(features (B,T,H), gate_features (B,T,H), attention (B,T,S), cache)`; the cache is a new object
        and the one passed in is not modified.
        """
        batch, steps = decoder_input_ids.shape
        if static_shapes_active(self.config):
            target_lengths = None  # every row runs every step: one shape, no host sync
        if cache is None or cache.keys is None:
            initial = self.initial_cache(encoder_outputs)
            cache = initial if cache is None else LSTMDecoderCache(
                cache.hidden, cache.cell, cache.feed, cache.seq_length, initial.keys, initial.query_bias_scores)
        memory = encoder_outputs.last_hidden_state  # (B, S, H)
        keys, query_bias_scores = cache.keys, cache.query_bias_scores
        padding = ~attention_mask.bool()  # (B, S)

        weights, w_combine = self._step_weights()
        embedded = self.dropout(self.embed_tokens(decoder_input_ids))  # (B, T, E)
        w_embedding, _, bias0 = weights[0]
        embedding_gates = torch.nn.functional.linear(embedded, w_embedding, bias0)  # (B, T, 4H), all steps at once
        between_layers = self.lstm.dropout if self.training else 0.0
        combine_bias = self.combine.bias
        if self.combine_decoder_input:  # the embedding part of W_o, like that of the LSTM input, for all steps at once
            start = 2 * self.lstm.hidden_size
            w_combine_embedding = self.combine.weight[:, start : start + self.embedding_size]
            combine_bias = torch.nn.functional.linear(embedded, w_combine_embedding, combine_bias)  # (B, T, H)
        hidden, cell, feed = cache.hidden, cache.cell, cache.feed  # (layers, B, H), (layers, B, H), (B, H)

        if target_lengths is None:
            order, active_rows = None, [batch] * steps
        else:  # longest first, so that the rows active at step i are the first active_rows[i]
            order = target_lengths.argsort(descending=True, stable=True)
            sorted_lengths = target_lengths[order].clamp(max=steps)
            active_rows = (sorted_lengths.unsqueeze(0) > torch.arange(steps, device=order.device).unsqueeze(1)).sum(1).tolist()
            memory, keys, padding, embedding_gates = memory[order], keys[order], padding[order], embedding_gates[order]
            hidden, cell, feed = hidden[:, order], cell[:, order], feed[order]
            if query_bias_scores is not None:
                query_bias_scores = query_bias_scores[order]
            if self.combine_decoder_input:
                combine_bias = combine_bias[order]
        # One view per step. unbind, not embedding_gates[:, step]: the backward of a slice writes a zero-filled
        # (B, T, 4H) gradient at every step (O(T²), about a tenth of an update on SCAN); unbind's backward stacks once.
        embedding_gates = embedding_gates.unbind(1)
        if self.combine_decoder_input:
            combine_bias = combine_bias.unbind(1)

        hidden, cell = list(hidden.unbind(0)), list(cell.unbind(0))
        finished = []  # (hidden, cell, feed) of rows that ended, latest first: they leave from the end of the batch
        outputs, tops, attentions = [], [], []
        rows = batch
        for step in range(steps):
            if active_rows[step] < rows:
                finished.append(([h[active_rows[step] :] for h in hidden], [c[active_rows[step] :] for c in cell],
                                 feed[active_rows[step] :]))
                rows = active_rows[step]
                hidden, cell, feed = [h[:rows] for h in hidden], [c[:rows] for c in cell], feed[:rows]
            layer_input = self.dropout(feed) if self.feed_dropout else feed
            fed_back = layer_input
            for layer, (_, w_merged, bias) in enumerate(weights):
                if layer == 0:
                    known = embedding_gates[step][:rows]
                else:
                    layer_input = nn.functional.dropout(layer_input, between_layers, self.training)
                    known = bias
                hidden[layer], cell[layer] = self._step(known, torch.cat([layer_input, hidden[layer]], 1), w_merged,
                                                        cell[layer])
                layer_input = hidden[layer]
            top = layer_input  # h_i: (rows, H)
            scores = torch.bmm(top.unsqueeze(1), keys[:rows]).squeeze(1)
            if query_bias_scores is not None:
                scores = scores + query_bias_scores[:rows]
            attention = scores.masked_fill(padding[:rows], float("-inf")).softmax(-1)  # (rows, S)
            context = torch.bmm(attention.unsqueeze(1), memory[:rows]).squeeze(1)  # (rows, H)
            if self.combine_decoder_input:
                combined = torch.addmm(combine_bias[step][:rows], torch.cat([context, top, fed_back], -1), w_combine.t())
            else:
                combined = torch.nn.functional.linear(torch.cat([context, top], -1), w_combine, combine_bias)
            feed = self.output_dropout(self.dropout(combined))
            outputs.append(feed)
            tops.append(top)
            attentions.append(attention)

        if order is None:
            features, gate_features = torch.stack(outputs, dim=1), torch.stack(tops, dim=1)
            attention = torch.stack(attentions, dim=1)
        else:
            # (row, step) pairs that were computed, as flat indices into (B·T) in the original row order
            positions = torch.cat([order[:rows_i] * steps + step for step, rows_i in enumerate(active_rows)])
            # skipped positions: zero features, and attention spread evenly over the source (a distribution, so the
            # head's output there is still one; the loss never reads it)
            source_tokens = attention_mask.to(attentions[0].dtype)
            even_attention = (source_tokens / source_tokens.sum(-1, keepdim=True)).unsqueeze(1).expand(-1, steps, -1)
            features, gate_features, attention = (
                skipped.reshape(batch * steps, -1).index_copy(0, positions, torch.cat(parts)).view(batch, steps, -1)
                for skipped, parts in ((outputs[0].new_zeros(batch, steps, outputs[0].shape[-1]), outputs),
                                       (tops[0].new_zeros(batch, steps, tops[0].shape[-1]), tops),
                                       (even_attention, attentions))
            )
            finished.append((hidden, cell, feed))
            hidden = [torch.cat([state[0][layer] for state in reversed(finished)]) for layer in range(self.num_layers)]
            cell = [torch.cat([state[1][layer] for state in reversed(finished)]) for layer in range(self.num_layers)]
            feed = torch.cat([state[2] for state in reversed(finished)])
            restore = order.argsort()
            hidden, cell, feed = [h[restore] for h in hidden], [c[restore] for c in cell], feed[restore]
        new_cache = LSTMDecoderCache(torch.stack(hidden), torch.stack(cell), feed, cache.seq_length + steps,
                                     cache.keys, cache.query_bias_scores)
        return features, gate_features, attention, new_cache


class LSTMEncoderDecoder(Backbone):
    """The backbone: encoder + attentional decoder. Knows nothing about lexicons."""

    display_name = "LSTM"
    config_options = ("bidirectional_encoder", "feed_dropout", "combine_decoder_input", "attention_query_bias")

    def __init__(self, config):
        super().__init__()
        self.encoder = LSTMEncoder(config)
        self.decoder = LSTMAttentionDecoder(config)
        self.feature_size = config.hidden_size
        self.gate_feature_size = config.hidden_size
        self.applies_output_dropout = config.feed_dropout  # feed_dropout drops o_i before it is fed back

    def generation_context(self):
        return self.decoder.reusing_step_weights()
