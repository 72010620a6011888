"""Syntactic Attention (Russin, Jo, O'Reilly & Bengio 2019): syntax decides where to attend, semantics what to write.

The encoder reads the source x_1..x_n in two separate streams, and the decoder keeps them apart: the attention and
the decoder's state come from syntax only, the output from semantics only.

Encoder (paper v1, ``syntax_encoder="paper"``; H = `hidden_size`, E = `embedding_size`)::

    m_j = W_m x_j                                       semantic stream: context-free, (B, S, E)
    f_j, b_j = biLSTM(W_m x)_j                          syntactic stream: forward / backward states, (B, S, H) each
    h_j = [f_{j-1}; b_{j+1}]                            annotation of word j from its neighbours only, (B, S, 2H);
                                                        f_0 = b_{n+1} = 0: no neighbour on that side
    s_0 = ReLU(W_0 [f_n; b_1] + b_0)                    first attention query, from the final states, (B, 2H)

The annotation of word j leaves word j out: what the decoder attends with is the word's role, not the word. (The
paper prints the arrows the other way round; its code takes the neighbours, as here.) The biLSTM is two LSTM stacks
of `num_layers` layers, one per direction, each reading only its own direction's layer below: in PyTorch's stacked
biLSTM, the second layer's forward state at j−1 would read the first layer's backward state at j−1, which has read
word j (one layer, the code's default, is the same either way). The paper does not give s_0; it is the code's.
`dropout` on the embeddings and between layers.

Decoder step i (an LSTM g of size 2H, one layer, state (s_i, cell_i) starting from zeros)::

    α_ij = softmax_j(s_{i-1} · h_j)                     dot-product attention from syntax, masked on source padding
    c_i  = Σ_j α_ij h_j                                 syntactic context: the only input of the decoder LSTM
    d_i  = Σ_j α_ij m_j                                 semantic output features: p(y_i) = softmax(W d_i)
    s_i  = g(c_i, s_{i-1})

**The decoder never reads the previous output token**: the step computes the same thing under teacher forcing and in
greedy decoding, and `decoder_input_ids` only says how many steps to run.

Options (config fields, all off by default):

* ``syntax_encoder="code"``: the authors' public code, the version the lexicon paper ran as its SyntAtt baseline. The
  syntactic stream gets its own embedding W_x (H/2 wide) and a first biLSTM of H/2 per direction; the neighbours'
  annotation [f_{j-1}; b_{j+1}] (H wide) is overwritten at the first position and at each row's own last position by
  learned start and end annotation vectors, then read by a second biLSTM of H per direction, whose states are h_j
  and whose final states give s_0. The first and last positions are ``<s>`` and ``</s>`` when the tokenizer puts
  ``<s>`` before every source (`LexicalTokenizer(source_bos=True)`, as the code's data do); without it the first
  word's annotation is replaced.
* ``syntax_action``: the output also reads the syntax, p(y_i) = softmax(W [d_i; c_i]) (the paper's ablation).
* ``sequential_semantics``: m_j comes from an extra biLSTM over W_m x (E/2 per direction) instead of being
  context-free (the paper's ablation, which hurts SCAN jump).

Interface with the lexical head: α_i is the syntactic attention; the output features are d_i ([d_i; c_i] with
`syntax_action`), so with ``lexical_mode="none"`` the head's p_write(w) = softmax(W_write d_i) is SyntAtt's own
output; the gate features are s_i, the decoder state after reading this step's c_i: syntax decides how much of
p(y_i) comes from the lexicon (p_gate = σ(w_gateᵀ s_i)), semantics and L what is written.

Batching: each recurrence runs packed (`pack_padded_sequence`), so padding never reaches a row's states; the
neighbour shift is two padded slices; the end annotation sits at each row's own last token; the attention is masked
on padding. A padded batch gives each row what the row gives alone. With teacher forcing (`target_lengths`) the
decoder's step loop runs each row only to its own target length, like the LSTM backbone's.

The step loop runs the recurrence only: the scores and c_i (one batched matmul each, on every row) and the LSTM
update (on the rows still running). d_i = Σ_j α_ij m_j of all steps is one batched matmul after the loop, since no
step reads it. The decoder cache (`SyntacticAttentionCache`, for `generate()`) is the LSTM's state and the next
query; h_j and m_j are the encoder's output, which `generate()` keeps and expands for beam search. Beams of one
source share one state (it does not depend on the tokens chosen), so every hypothesis reads the same per-step
distributions: the best one of each length takes the most probable token other than `</s>` at each step before its
end, and beam search differs from greedy decoding only in where it ends.

Shapes: B batch, S source length, T decoder steps, H `hidden_size`, E `embedding_size`.
"""

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .common import Backbone, DecoderCache, LexicalEncoderOutput, check_source

SYNTAX_ENCODERS = ("paper", "code")


@dataclass
class SyntacticAttentionEncoderOutput(LexicalEncoderOutput):
    """`LexicalEncoderOutput` with the two streams. Batch-first like every field, so that beam search expands them.

    Attributes:
        last_hidden_state: (B, S, 2H) the syntactic annotations h_j, the attention memory (zero on padding).
        semantic_states: (B, S, E) the semantic stream m_j (zero on padding).
        initial_query: (B, 2H) s_0, the decoder's first attention query.
    """

    semantic_states: torch.Tensor | None = None
    initial_query: torch.Tensor | None = None


class SyntacticAttentionCache(DecoderCache):
    """The decoder's state between `generate()` steps: the LSTM's state and the next attention query.

    Attributes:
        hidden, cell: (B, 2H) the decoder LSTM's state s_{i-1}, cell_{i-1} (zeros before the first step).
        query: (B, 2H) the next step's attention query: s_0 before the first step, then s_{i-1} (= hidden).
        seq_length: the number of decoder steps taken.

    Everything else a step reads (h_j, m_j) is the encoder's output, which `generate()` keeps and expands for beams.
    """

    def __init__(self, hidden: torch.Tensor, cell: torch.Tensor, query: torch.Tensor, seq_length: int = 0):
        self.hidden, self.cell, self.query, self.seq_length = hidden, cell, query, seq_length

    @property
    def is_linear(self) -> list[bool]:
        """One layer, of fixed size (it does not grow with the tokens consumed)."""
        return [True]

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Keep, for every beam, the state of the parent beam search chose (in place)."""
        self.hidden = self.hidden.index_select(0, beam_idx.to(self.hidden.device))
        self.cell = self.cell.index_select(0, beam_idx.to(self.cell.device))
        self.query = self.query.index_select(0, beam_idx.to(self.query.device))

    def __repr__(self) -> str:
        return f"SyntacticAttentionCache(batch={self.hidden.shape[0]}, seq_length={self.seq_length})"


def run_packed(lstm: nn.LSTM, inputs: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`lstm` over right-padded `inputs` (B, S, I), packed so that padding never enters a row's recurrence.

    Returns the states (B, S, D · directions), zero on padding, and the last layer's final states (B, D · directions):
    forward after the row's own last token, and (bidirectional) backward after its first."""
    packed = pack_padded_sequence(inputs, lengths.cpu(), batch_first=True, enforce_sorted=False)
    packed_states, (final, _) = lstm(packed)  # final: (layers · directions, B, D), in the batch's own order
    states, _ = pad_packed_sequence(packed_states, batch_first=True, total_length=inputs.shape[1])
    directions = 2 if lstm.bidirectional else 1
    return states, torch.cat(list(final[-directions:]), dim=-1)


def reverse_rows(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each row's tokens in reverse order, (B, S, ·) → (B, S, ·); padding stays where it is."""
    positions = torch.arange(x.shape[1], device=x.device)[None, :]  # (1, S)
    last = (lengths - 1)[:, None]  # (B, 1)
    index = torch.where(positions <= last, last - positions, positions)  # (B, S)
    return x.gather(1, index[..., None].expand_as(x))


def neighbour_annotations(forward: torch.Tensor, backward: torch.Tensor) -> torch.Tensor:
    """[f_{j-1}; b_{j+1}] from forward and backward states (B, S, D) each, zero on padding → (B, S, 2D).

    The forward states move one position right (f_0 = 0: nothing before the first word), the backward states one
    position left; at each row's own last token b_{n+1} is the row's first padding state, zero (or the zero added at
    the end for the longest rows): a row's end is its own, not the batch's."""
    before = F.pad(forward, (0, 0, 1, 0))[:, :-1]  # before[:, j] = f_{j-1}
    after = F.pad(backward, (0, 0, 0, 1))[:, 1:]  # after[:, j] = b_{j+1}
    return torch.cat([before, after], dim=-1)


class SyntacticAttentionEncoder(nn.Module):
    """The two streams: semantic m_j and syntactic h_j, plus the first query s_0."""

    main_input_name = "input_ids"

    def __init__(self, config):
        super().__init__()
        self.pad_token_id = config.pad_token_id
        self.source_vocab_size = config.source_vocab_size
        self.code_variant = config.syntax_encoder == "code"
        hidden, embedding, layers = config.hidden_size, config.embedding_size, config.num_layers
        between_layers = config.dropout if layers > 1 else 0.0
        self.embed_tokens = nn.Embedding(config.source_vocab_size, embedding, config.pad_token_id)  # W_m
        self.dropout = nn.Dropout(config.dropout)
        self.semantic_lstm = nn.LSTM(  # sequential semantics: m_j = biLSTM(W_m x)_j, E/2 per direction
            embedding, embedding // 2, layers, batch_first=True, dropout=between_layers, bidirectional=True,
        ) if config.sequential_semantics else None
        # The neighbours' annotation runs the two directions as separate LSTM stacks: in PyTorch's stacked biLSTM,
        # layer 2's forward state at j-1 reads layer 1's backward state at j-1, which has read word j.
        syntax_input = hidden // 2 if self.code_variant else embedding  # code: W_x x_j; v1: W_m x_j
        syntax_size = hidden // 2 if self.code_variant else hidden  # per direction
        self.syntax_forward = nn.LSTM(syntax_input, syntax_size, layers, batch_first=True, dropout=between_layers)
        self.syntax_backward = nn.LSTM(syntax_input, syntax_size, layers, batch_first=True, dropout=between_layers)
        if self.code_variant:
            self.syntax_embed_tokens = nn.Embedding(config.source_vocab_size, hidden // 2, config.pad_token_id)  # W_x
            self.boundary_annotations = nn.Embedding(2, hidden)  # row 0: start, row 1: end (learned, N(0, 1))
            self.second_syntax_lstm = nn.LSTM(hidden, hidden, layers, batch_first=True, dropout=between_layers,
                                              bidirectional=True)
        self.initial_query = nn.Linear(2 * hidden, 2 * hidden)  # W_0, b_0

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embed_tokens = value

    def neighbour_context(self, syntax_input: torch.Tensor, lengths: torch.Tensor):
        """The first syntactic stream over `syntax_input` (B, S, I): the neighbours' annotations [f_{j-1}; b_{j+1}]
        (B, S, 2D), which hold nothing of word j, and the final states [f_n; b_1] (B, 2D)."""
        forward, forward_final = run_packed(self.syntax_forward, syntax_input, lengths)  # (B, S, D), (B, D)
        backward, backward_final = run_packed(self.syntax_backward, reverse_rows(syntax_input, lengths), lengths)
        backward = reverse_rows(backward, lengths)  # b_j: the backward stack after reading x_n … x_j
        return neighbour_annotations(forward, backward), torch.cat([forward_final, backward_final], dim=-1)

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        return_dict: bool = True,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        **kwargs,
    ) -> SyntacticAttentionEncoderOutput:
        attention_mask = check_source(input_ids, attention_mask, self.pad_token_id, self.source_vocab_size)
        lengths = attention_mask.sum(-1)
        on_tokens = attention_mask.unsqueeze(-1)  # (B, S, 1): zero the padding positions of what is returned
        embedded = self.dropout(self.embed_tokens(input_ids))  # W_m x_j (B, S, E)
        # v1: the syntactic stream reads the same (dropped) embedding; the code: its own W_x x_j (B, S, H/2)
        syntax_input = self.dropout(self.syntax_embed_tokens(input_ids)) if self.code_variant else embedded
        annotations, final = self.neighbour_context(syntax_input, lengths)  # (B, S, 2H) v1, (B, S, H) code
        if self.code_variant:
            positions = torch.arange(input_ids.shape[1], device=input_ids.device)
            first = (positions == 0)[None, :, None]  # (1, S, 1)
            last = (positions[None, :] == (lengths - 1)[:, None])[..., None]  # (B, S, 1): each row's own last token
            start, end = self.boundary_annotations.weight  # (H,) each
            # start first, then end: a one-token source gets the end annotation, as in the code
            annotations = torch.where(last, end, torch.where(first, start, annotations))
            annotations, final = run_packed(self.second_syntax_lstm, annotations, lengths)  # (B, S, 2H), (B, 2H)
        annotations = annotations * on_tokens.to(annotations.dtype)
        initial_query = torch.relu(self.initial_query(final))  # s_0 (B, 2H)

        semantics = embedded  # m_j = W_m x_j
        if self.semantic_lstm is not None:
            semantics, _ = run_packed(self.semantic_lstm, embedded, lengths)
        semantics = semantics * on_tokens.to(semantics.dtype)
        return SyntacticAttentionEncoderOutput(
            last_hidden_state=annotations, source_ids=input_ids, semantic_states=semantics,
            initial_query=initial_query, hidden_states=(annotations,) if output_hidden_states else None,
        )


def lstm_cell(gates: torch.Tensor, cell: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One LSTM update from the summed gate pre-activations (N, 4D) in PyTorch's order (input, forget, cell, output)."""
    input_gate, forget_gate, candidate, output_gate = gates.chunk(4, dim=-1)
    cell = torch.sigmoid(forget_gate) * cell + torch.sigmoid(input_gate) * torch.tanh(candidate)
    return torch.sigmoid(output_gate) * torch.tanh(cell), cell


class SyntacticAttentionDecoder(nn.Module):
    """The decoder LSTM g, fed only c_i; returns (d_i or [d_i; c_i], s_i, α_i, new cache) for the lexical head.

    Its weights live in a one-layer `nn.LSTM` (PyTorch's parameter names and initialisation); the step is computed
    here because each step's input c_i depends on the previous step's state through the attention."""

    def __init__(self, config):
        super().__init__()
        size = 2 * config.hidden_size
        self.lstm = nn.LSTM(size, size, 1, batch_first=True)  # g: input c_i, state s_i
        self.syntax_action = config.syntax_action

    def initial_cache(self, encoder_outputs: SyntacticAttentionEncoderOutput) -> SyntacticAttentionCache:
        """The state before the first step: zeros, and s_0 as the query."""
        query = encoder_outputs.initial_query  # s_0 (B, 2H)
        zeros = query.new_zeros(query.shape)
        return SyntacticAttentionCache(zeros, zeros, query, 0)

    def forward(
        self,
        decoder_input_ids: torch.LongTensor,
        encoder_outputs: SyntacticAttentionEncoderOutput,
        attention_mask: torch.Tensor,
        cache: SyntacticAttentionCache | None = None,
        target_lengths: torch.Tensor | None = None,
    ):
        """Run T = ``decoder_input_ids.shape[1]`` steps after those the `cache` holds (from the start without one).

        Only the number of steps is read from `decoder_input_ids`: the decoder never sees its outputs. With
        `target_lengths` (B,) row b runs only its first `target_lengths[b]` steps (rows sorted by length, the finished
        ones dropped from the recurrence at each step); the positions past it get zero features and gate features
        and attention spread evenly over the source (the loss never reads them), and the returned cache holds each
        row's state after its own last step.

        The step loop runs the recurrence only (α_i, c_i, s_i); the semantic features d_i = Σ_j α_ij m_j of all
        steps are one batched matmul after it, since nothing in the loop reads them.

        Returns `(features (B, T, E or E + 2H), gate_features (B, T, 2H), attention (B, T, S), cache)`; the cache is
        a new object, and the one passed in is not modified.
        """
        batch, steps = decoder_input_ids.shape
        if cache is None:
            cache = self.initial_cache(encoder_outputs)
        keys = encoder_outputs.last_hidden_state  # h_j (B, S, 2H)
        padding = ~attention_mask.bool()  # (B, S)
        hidden, cell, query = cache.hidden, cache.cell, cache.query  # (B, 2H) each
        size = hidden.shape[-1]
        w_ih, w_hh = self.lstm.weight_ih_l0, self.lstm.weight_hh_l0  # (8H, 2H) each
        bias = self.lstm.bias_ih_l0 + self.lstm.bias_hh_l0  # (8H,)

        if target_lengths is None:
            order, active_rows = None, [batch] * steps
        else:  # longest first, so that the rows still running at step i are the first active_rows[i]
            order = target_lengths.argsort(descending=True, stable=True)
            sorted_lengths = target_lengths[order].clamp(max=steps)
            active_rows = (sorted_lengths[None, :] > torch.arange(steps, device=order.device)[:, None]).sum(1).tolist()
            keys, padding = keys[order], padding[order]
            hidden, cell, query = hidden[order], cell[order], query[order]

        alphas, states = [], []
        for step in range(steps):
            rows = active_rows[step]
            # The attention runs on every row and a finished row's result is dropped: slicing the (B, S, 2H) keys
            # per step would cost more in backward (a zero-filled (B, S, 2H) gradient per step) than the rows it saves.
            scores = torch.bmm(keys, query.unsqueeze(-1)).squeeze(-1)  # e_ij = s_{i-1}·h_j (B, S)
            alpha = scores.masked_fill(padding, float("-inf")).softmax(-1)  # α_i (B, S)
            context = torch.bmm(alpha.unsqueeze(1), keys).squeeze(1)[:rows]  # c_i (rows, 2H)
            gates = torch.addmm(torch.addmm(bias, context, w_ih.t()), hidden[:rows], w_hh.t())  # W_ih c_i + W_hh s + b
            new_hidden, new_cell = lstm_cell(gates, cell[:rows])  # s_i (rows, 2H)
            if rows < batch:  # rows that ended keep their state, and get no α (zeros) at this position
                alpha = torch.cat([alpha[:rows], alpha.new_zeros(batch - rows, alpha.shape[1])])
                states.append(torch.cat([new_hidden, new_hidden.new_zeros(batch - rows, size)]))
                new_hidden, new_cell = torch.cat([new_hidden, hidden[rows:]]), torch.cat([new_cell, cell[rows:]])
            else:
                states.append(new_hidden)
            hidden, cell, query = new_hidden, new_cell, new_hidden
            alphas.append(alpha)

        # α (B, T, S): zero rows at the positions not computed, so that their features below are zeros
        attention = torch.stack(alphas, 1) if steps else keys.new_zeros(batch, 0, keys.shape[1])
        gate_features = torch.stack(states, 1) if steps else keys.new_zeros(batch, 0, size)  # s_i (B, T, 2H)
        if order is not None:
            restore = order.argsort()
            attention, gate_features = attention[restore], gate_features[restore]
            hidden, cell, query = hidden[restore], cell[restore], query[restore]
        features = torch.bmm(attention, encoder_outputs.semantic_states)  # d_i = Σ_j α_ij m_j (B, T, E)
        if self.syntax_action:
            features = torch.cat([features, torch.bmm(attention, encoder_outputs.last_hidden_state)], -1)  # [d_i; c_i]
        if order is not None:  # the positions not computed: α spread evenly over the source (still a distribution)
            source_tokens = attention_mask.to(attention.dtype)
            skipped = attention.sum(-1, keepdim=True) == 0  # (B, T, 1)
            attention = torch.where(skipped, (source_tokens / source_tokens.sum(-1, keepdim=True))[:, None], attention)
        new_cache = SyntacticAttentionCache(hidden, cell, query, cache.seq_length + steps)
        return features, gate_features, attention, new_cache


class SyntacticAttentionEncoderDecoder(Backbone):
    """The backbone: the two-stream encoder + the syntax-driven decoder. Knows nothing about lexicons."""

    display_name = "Syntactic Attention"
    config_options = ("syntax_encoder", "syntax_action", "sequential_semantics")

    @classmethod
    def validate_config(cls, config) -> None:
        if config.syntax_encoder not in SYNTAX_ENCODERS:
            raise ValueError(f"syntax_encoder must be one of {SYNTAX_ENCODERS}, got {config.syntax_encoder!r}")
        if config.num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {config.num_layers}")
        if config.syntax_encoder == "code" and config.hidden_size % 2:
            raise ValueError(f"syntax_encoder='code' needs an even hidden_size (its syntax embedding and first biLSTM "
                             f"are hidden_size / 2 wide), got {config.hidden_size}")
        if config.sequential_semantics and config.embedding_size % 2:
            raise ValueError(f"sequential_semantics needs an even embedding_size (a biLSTM of embedding_size / 2 per "
                             f"direction), got {config.embedding_size}")

    def __init__(self, config):
        super().__init__()
        self.encoder = SyntacticAttentionEncoder(config)
        self.decoder = SyntacticAttentionDecoder(config)
        self.feature_size = config.embedding_size + (2 * config.hidden_size if config.syntax_action else 0)
        self.gate_feature_size = 2 * config.hidden_size
