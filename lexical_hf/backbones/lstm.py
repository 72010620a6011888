"""LSTM encoder–decoder with attention and input feeding: the paper's backbone.

Encoder: embeddings → dropout → n-layer LSTM (optionally bidirectional; directions are projected back to the hidden
size for attention and summed for the decoder's initial state, as in the paper's code).

Decoder step i (Luong-style input feeding)::

    h_i      = LSTM([emb(y_{i-1}); o_{i-1}], state_{i-1})          o_0 = 0, state_0 = encoder final state
    α_i^j    ∝ exp(h_iᵀ W_att e_j)                                  (masked on source padding)
    c_i      = Σ_j α_i^j e_j
    o_i      = dropout(W_o [c_i; h_i])                              fed to the next step and to p_write

The head receives features o_i, gate features h_i and α_i. Input feeding makes the decoder sequential in i, so the
step loop runs over target positions (each step handles the whole batch); everything that does not depend on the
recurrence (embeddings, attention keys, the output projection in the head) is computed once for all steps.
"""

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from transformers.utils import ModelOutput


@dataclass
class LexicalEncoderOutput(ModelOutput):
    """Encoder output. Every tensor is batch-first so that `generate()` can expand it for beam search.

    Attributes:
        last_hidden_state: (B, S, H) encoder states e_j used as attention memory.
        source_ids: (B, S) the source token ids, needed by the lexical head at every decoding step.
        final_hidden: (B, num_layers, H) final LSTM hidden state (directions summed), initialises the decoder.
        final_cell: (B, num_layers, H) final LSTM cell state (directions summed).
    """

    last_hidden_state: torch.Tensor | None = None
    source_ids: torch.Tensor | None = None
    final_hidden: torch.Tensor | None = None
    final_cell: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


class LSTMDecoderCache:
    """Recurrent decoder state carried between `generate()` steps (the LSTM's "KV cache").

    Holds the LSTM hidden and cell states (num_layers, B, H), the input-feeding vector o_{i-1} (B, H) and how many
    target tokens have been consumed. `reorder_cache` follows beam search's choice of parents.
    """

    is_croppable = False

    def __init__(self, hidden: torch.Tensor, cell: torch.Tensor, feed: torch.Tensor, seq_length: int = 0):
        self.hidden, self.cell, self.feed, self.seq_length = hidden, cell, feed, seq_length

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.seq_length

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self.hidden = self.hidden.index_select(1, beam_idx.to(self.hidden.device))
        self.cell = self.cell.index_select(1, beam_idx.to(self.cell.device))
        self.feed = self.feed.index_select(0, beam_idx.to(self.feed.device))

    def __repr__(self) -> str:
        return f"LSTMDecoderCache(batch={self.feed.shape[0]}, seq_length={self.seq_length})"


class LSTMEncoder(nn.Module):
    main_input_name = "input_ids"

    def __init__(self, config):
        super().__init__()
        self.pad_token_id = config.pad_token_id
        self.num_layers = config.num_layers
        self.directions = 2 if config.bidirectional_encoder else 1
        self.embed_tokens = nn.Embedding(config.source_vocab_size, config.embedding_size, config.pad_token_id)
        self.dropout = nn.Dropout(config.dropout)
        self.lstm = nn.LSTM(
            config.embedding_size,
            config.hidden_size,
            config.num_layers,
            batch_first=True,
            dropout=config.dropout if config.num_layers > 1 else 0.0,
            bidirectional=config.bidirectional_encoder,
        )
        self.direction_projection = (
            nn.Linear(2 * config.hidden_size, config.hidden_size) if config.bidirectional_encoder else nn.Identity()
        )

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        return_dict: bool = True,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        **kwargs,
    ) -> LexicalEncoderOutput:
        if attention_mask is None:
            attention_mask = input_ids.ne(self.pad_token_id)
        lengths = attention_mask.sum(-1)
        embedded = self.dropout(self.embed_tokens(input_ids))
        # Packing makes the final state the one after each sequence's last real token, not after padding.
        packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True, enforce_sorted=False)
        packed_states, (hidden, cell) = self.lstm(packed)
        states, _ = pad_packed_sequence(packed_states, batch_first=True, total_length=input_ids.shape[1])
        states = self.direction_projection(states)

        batch = input_ids.shape[0]
        hidden = hidden.view(self.num_layers, self.directions, batch, -1).sum(1).transpose(0, 1)
        cell = cell.view(self.num_layers, self.directions, batch, -1).sum(1).transpose(0, 1)
        return LexicalEncoderOutput(
            last_hidden_state=states, source_ids=input_ids, final_hidden=hidden, final_cell=cell
        )


class LSTMAttentionDecoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        hidden = config.hidden_size
        self.embed_tokens = nn.Embedding(config.target_vocab_size, config.embedding_size, config.pad_token_id)
        self.dropout = nn.Dropout(config.dropout)
        self.lstm = nn.LSTM(
            config.embedding_size + hidden,
            hidden,
            config.num_layers,
            batch_first=True,
            dropout=config.dropout if config.num_layers > 1 else 0.0,
        )
        self.attention_query = nn.Linear(hidden, hidden, bias=False)  # W_att
        self.combine = nn.Linear(2 * hidden, hidden)  # W_o

    def initial_cache(self, encoder_outputs: LexicalEncoderOutput) -> LSTMDecoderCache:
        hidden = encoder_outputs.final_hidden.transpose(0, 1).contiguous()
        cell = encoder_outputs.final_cell.transpose(0, 1).contiguous()
        feed = hidden.new_zeros(hidden.shape[1], hidden.shape[2])
        return LSTMDecoderCache(hidden, cell, feed, 0)

    def forward(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_outputs: LexicalEncoderOutput,
        attention_mask: torch.Tensor,
        cache: LSTMDecoderCache | None = None,
    ):
        """Run the decoder over `decoder_input_ids` (B, T) starting from `cache` (or the encoder's final state).

        Returns `(features (B,T,H), gate_features (B,T,H), attention (B,T,S), cache)`; the cache is a new object
        and the one passed in is not modified.
        """
        if cache is None:
            cache = self.initial_cache(encoder_outputs)
        memory = encoder_outputs.last_hidden_state  # (B, S, H)
        # score_j = (W_att h)·e_j = h·(W_attᵀ e_j): project the memory once instead of the query at every step.
        keys = memory @ self.attention_query.weight  # (B, S, H)
        padding = ~attention_mask.bool().unsqueeze(1)  # (B, 1, S)

        embedded = self.dropout(self.embed_tokens(decoder_input_ids))  # (B, T, E)
        state, feed = (cache.hidden, cache.cell), cache.feed
        outputs, hiddens, attentions = [], [], []
        for step in range(decoder_input_ids.shape[1]):
            step_input = torch.cat([embedded[:, step], feed], dim=-1).unsqueeze(1)
            hidden, state = self.lstm(step_input, state)  # hidden: (B, 1, H)
            scores = torch.bmm(hidden, keys.transpose(1, 2)).masked_fill(padding, float("-inf"))
            attention = scores.softmax(-1)  # (B, 1, S)
            context = torch.bmm(attention, memory)  # (B, 1, H)
            feed = self.dropout(self.combine(torch.cat([context, hidden], dim=-1))).squeeze(1)
            outputs.append(feed)
            hiddens.append(hidden)
            attentions.append(attention)

        features = torch.stack(outputs, dim=1)
        gate_features = torch.cat(hiddens, dim=1)
        attention = torch.cat(attentions, dim=1)
        new_cache = LSTMDecoderCache(state[0], state[1], feed, cache.seq_length + decoder_input_ids.shape[1])
        return features, gate_features, attention, new_cache


class LSTMEncoderDecoder(nn.Module):
    """The backbone: encoder + attentional decoder. Knows nothing about lexicons."""

    def __init__(self, config):
        super().__init__()
        self.encoder = LSTMEncoder(config)
        self.decoder = LSTMAttentionDecoder(config)
        self.feature_size = config.hidden_size
        self.gate_feature_size = config.hidden_size
