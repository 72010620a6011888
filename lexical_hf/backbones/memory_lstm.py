"""LSTM transducers with a continuous Stack, Queue or DeQue, and deep LSTMs: the systems of Grefenstette et al. (2015),
"Learning to Transduce with Unbounded Memory".

One recurrent network reads the joint sequence ``x_1 … x_n </s> <s> y_1 … y_m`` (the paper's ``source ||| target``:
the source side ends with the tokenizer's ``</s>``, and the decoder start token ``<s>`` is the separator) and
predicts y_1 … y_m </s> after the separator. Source and target tokens have separate embedding tables; everything
else, the controller and its memory, runs on through the separator: the "decoder" continues the state the
"encoder" ended in. There is no attention over the source.

Memory LSTMs (``backbone="stack_lstm" | "queue_lstm" | "deque_lstm"``; H = `hidden_size`, m = `memory_width`,
E = 1 ends for Stack/Queue, 2 for the DeQue; `lexical_hf.memory` holds the memories and their equations)::

    (h_t, c_t) = LSTM([emb(i_t); r_{t-1}], (h_{t-1}, c_{t-1}))      h_0 learned, c_0 = 0, r_0 = 0
    d_t = σ(W_d h_t + b_d)    u_t = σ(W_u h_t + b_u)                 (B, E): push and pop; b_u starts at -1,
                                                                     b_d at `memory_push_bias` if set
                                                                     (the DeQue's bottom end: at
                                                                     `memory_bottom_push_bias` if set)
    v_t = tanh(W_v h_t + b_v)                                        (B, E, m): the pushed values
    r_t = memory(d_t, u_t, v_t)                                      (B, E·m): pop, push, then read
    o_t = tanh(W_o h_t + b_o)                                        (B, H): the output features

With ``separate_target_lstm=True`` the separator and target steps run LSTM weights of their own (an encoder and a
decoder LSTM, as in most sequence-to-sequence models), still continuing the state and the memory the source ended
in; the memory interface (W_d, W_u, W_v, W_o) stays one set. The paper's network is one LSTM over the joint
sequence (the default); results/neural_memory.md compares the two in training.

The head's softmax reads o_t: with ``lexical_mode="none"``, p(y_t) = softmax(W_write o_t). The paper's controller
has one layer (``num_layers=1``); with more, layer 0 reads [emb(i_t); r_{t-1}] and the top layer's state is h_t.
o_t is not fed back, so it is computed once for all positions after the recurrence.

Deep LSTM (``backbone="deep_lstm"``, the paper's baselines): an LSTM of `num_layers` layers (1–8 in the paper)
over the joint sequence, h_0 = c_0 = 0; the output features are the top layer's states.

Padding (both): every row runs every position, and a padded position leaves the row's state as it was (h and c
kept, the memory pushes an invisible zero-strength row and pops nothing, see `MemoryState`), so a padded batch gives
each row what the row gives alone. Source padding follows `attention_mask`; target padding is the pad id in
`decoder_input_ids` (teacher forcing pads labels with -100, which become pad ids).

Interface with the head: features o_t (deep LSTM: h_t), gate features h_t, and an attention spread evenly over the
source tokens that ``lexical_mode="none"``, the only mode these backbones accept, never reads.

Generation: the encoder's output carries the controller state and the memory's occupied rows as batch-first
tensors (so that beam search expands them); the decoder cache (`JointSequenceCache`) carries (h, c) and the
`MemoryState`. A memory step writes its buffer in place (rows of the old state are never rewritten), so the first
continuation of a cache shares its buffer and any further continuation from the same cache steps a copy: the
cache passed in keeps its contents.

Shapes: B batch, S source length, T decoder positions, L layers, H `hidden_size`, I `embedding_size`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from torch import nn
from torch.nn import functional as F

from ..memory import MemoryInterface, MemoryState
from .common import Backbone, DecoderCache, LexicalEncoderOutput, check_source
from .recurrence import LSTMWeights, lstm_cell, static_shapes_active


# ----- parameters -----------------------------------------------------------------------------------------------------

class ControllerWeights(LSTMWeights):
    """`LSTMWeights` plus the learned initial hidden state h_0 (H,) of the memory controller (every layer starts from
    it; zeros at initialisation). Its `reset_parameters` is what the model's initialisation calls, so h_0 is zero
    again after a meta-device build and `init_weights()`, and left alone when `from_pretrained` loaded it."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int, dropout: float = 0.0):
        super().__init__(input_size, hidden_size, num_layers, dropout=dropout)
        self.initial_hidden = nn.Parameter(torch.zeros(hidden_size))

    def reset_parameters(self) -> None:
        super().reset_parameters()
        if hasattr(self, "initial_hidden"):  # LSTMWeights.__init__ resets before h_0 exists
            nn.init.zeros_(self.initial_hidden)


class ConstantBiasLinear(nn.Linear):
    """`nn.Linear` whose bias starts at a constant (the pop bias b_u = -1 of the paper's Appendix B), or at one
    constant per output where `bias_value` is a sequence (None: that output keeps `nn.Linear`'s random start), also
    when the model's initialisation resets it (`nn.init`, so weights that `from_pretrained` loaded are left alone)."""

    def __init__(self, in_features: int, out_features: int, bias_value: float | Sequence[float | None]):
        self.bias_values = tuple(bias_value) if isinstance(bias_value, Sequence) else (bias_value,) * out_features
        super().__init__(in_features, out_features)

    def reset_parameters(self) -> None:
        super().reset_parameters()
        with torch.no_grad():
            for index, value in enumerate(self.bias_values):
                if value is not None:
                    self.bias[index] = value


class ControllerInterface(MemoryInterface):
    """`MemoryInterface` whose pop projection keeps b_u = `pop_bias` (and, if given, the push projection b_d =
    `push_bias`) through the model's initialisation, with the push, pop and value projections merged into one
    matrix for the step loop."""

    def __init__(self, hidden_size: int, memory_width: int, kind: str, pop_bias: float = -1.0,
                 push_bias: float | None = None, bottom_push_bias: float | None = None):
        super().__init__(hidden_size, memory_width, kind, pop_bias=pop_bias, push_bias=push_bias)
        self.pop = ConstantBiasLinear(hidden_size, self.memory.num_ends, pop_bias)
        push_start = push_bias if bottom_push_bias is None else (push_bias, bottom_push_bias)  # DeQue: top, bottom
        if push_start is not None:
            self.push = ConstantBiasLinear(hidden_size, self.memory.num_ends, push_start)

    def merged_controls(self) -> tuple[torch.Tensor, torch.Tensor]:
        """[W_d; W_u; W_v] (2E + E·m, H) and its bias: one matmul per step gives d_t, u_t and v_t."""
        parts = (self.push, self.pop, self.value)
        return torch.cat([p.weight for p in parts]), torch.cat([p.bias for p in parts])


# ----- encoder output and cache ---------------------------------------------------------------------------------------

@dataclass
class JointEncoderOutput(LexicalEncoderOutput):
    """`LexicalEncoderOutput` with the memory after the source, batch-first so that beam search expands it.

    Attributes:
        final_hidden, final_cell: (B, L, H) the controller state after each row's last source token.
        memory_values: (B, n, m) the occupied memory rows, bottom first (n = E · S; None for the deep LSTM).
        memory_strengths: (B, n) their strengths.
        memory_read: (B, E · m) the last read r_S.
    """

    memory_values: torch.Tensor | None = None
    memory_strengths: torch.Tensor | None = None
    memory_read: torch.Tensor | None = None


class JointSequenceCache(DecoderCache):
    """The recurrent state between `generate()` steps: hidden and cell (L, B, H), the `MemoryState` (None for the deep
    LSTM) and the number of target tokens consumed. `reorder_cache` follows beam search's parents (in place)."""

    def __init__(self, hidden: torch.Tensor, cell: torch.Tensor, memory: MemoryState | None, seq_length: int = 0):
        self.hidden, self.cell, self.memory, self.seq_length = hidden, cell, memory, seq_length
        self._shared = False  # whether a continuation already steps on this cache's memory buffer

    @property
    def is_linear(self) -> list[bool]:
        return [True] * self.hidden.shape[0]

    def continued_memory(self) -> MemoryState | None:
        """The memory to step on from this cache. A step writes the buffer in place beyond the occupied rows, so the
        first continuation shares the buffer (the rows this cache reads never change) and later ones get a copy:
        two continuations from one point would write the same rows."""
        if self.memory is None:
            return None
        if self._shared:
            return self.memory.select_rows(torch.arange(self.memory.batch_size))
        self._shared = True
        return replace(self.memory)

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self.hidden = self.hidden.index_select(1, beam_idx.to(self.hidden.device))
        self.cell = self.cell.index_select(1, beam_idx.to(self.cell.device))
        if self.memory is not None:
            self.memory.reorder(beam_idx)  # new tensors: no continuation shares them yet
            self._shared = False

    def __repr__(self) -> str:
        return f"JointSequenceCache(batch={self.hidden.shape[1]}, seq_length={self.seq_length}, memory={self.memory})"


# ----- the recurrence -------------------------------------------------------------------------------------------------

def step_masks(mask: torch.Tensor, static: bool) -> list[torch.Tensor | None]:
    """Per position, the (B,) mask of the rows that read a token there, or None where every row does (nothing to
    freeze: the step skips the masking). With `static` (torch.compile, CUDA graphs) every position keeps its mask,
    so that no host synchronisation decides the path. mask: (B, T) -> T entries."""
    mask = mask.bool()
    if static:
        return list(mask.unbind(1))
    full = mask.all(0).tolist()
    return [None if full[step] else column for step, column in enumerate(mask.unbind(1))]


def kept(keep: torch.Tensor | None, new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    """The new state on rows that read a token (keep (B,) True or None for all), the old one on padding."""
    return new if keep is None else torch.where(keep.unsqueeze(-1), new, old)


def masked_layer_from(inputs: torch.Tensor, masks: list, weight_ih: torch.Tensor, weight_hh: torch.Tensor,
                      bias: torch.Tensor, hidden: torch.Tensor, cell: torch.Tensor):
    """One LSTM layer over (B, T, I) from the state (hidden, cell) (B, H), frozen on padding (`step_masks`).

    Returns the outputs (B, T, H) (each position's new hidden state) and the final (hidden, cell)."""
    input_gates = F.linear(inputs, weight_ih, bias).unbind(1)  # T × (B, 4H): all positions at once
    outputs = []
    for step, gates in enumerate(input_gates):
        new_hidden, new_cell = lstm_cell(torch.addmm(gates, hidden, weight_hh.t()), cell)
        hidden, cell = kept(masks[step], new_hidden, hidden), kept(masks[step], new_cell, cell)
        outputs.append(new_hidden)
    return torch.stack(outputs, dim=1), hidden, cell


class JointRecurrence(nn.Module):
    """The network that reads the joint sequence: a deep LSTM, or an LSTM controller with a memory (`memory_kind`).
    The backbone owns it; the encoder and the decoder both run it, or, with ``separate_target_lstm``, the decoder
    runs a second one built with `shared_interface` (the first one's memory interface, not registered again: the
    push, pop, value and output projections stay one set) and LSTM weights of its own, without h_0 (it starts from
    the state the source ended in)."""

    def __init__(self, config, memory_kind: str | None, shared_interface: ControllerInterface | None = None):
        super().__init__()
        self.memory_kind, self.num_layers, self.config = memory_kind, config.num_layers, config
        self.layer_dropout = config.dropout if config.num_layers > 1 else 0.0
        if memory_kind is None:
            self.lstm = LSTMWeights(config.embedding_size, config.hidden_size, config.num_layers)
            self.interface = None
            return
        if shared_interface is None:
            self.interface = ControllerInterface(config.hidden_size, config.memory_width, memory_kind,
                                                 push_bias=config.memory_push_bias,
                                                 bottom_push_bias=config.memory_bottom_push_bias)
            weights = ControllerWeights
        else:
            object.__setattr__(self, "interface", shared_interface)
            weights = LSTMWeights
        self.lstm = weights(config.embedding_size + self.interface.read_size, config.hidden_size, config.num_layers)

    def initial_state(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(h_0, c_0), each (L, B, H): the learned h_0 for a controller, zeros for the deep LSTM."""
        weight = self.lstm.weight_hh_l0
        cell = weight.new_zeros(self.num_layers, batch, self.lstm.hidden_size)
        if self.interface is None:
            return cell.clone(), cell
        return self.lstm.initial_hidden.expand_as(cell).contiguous(), cell

    def new_memory(self, batch: int, capacity: int) -> MemoryState | None:
        """The empty memory (V_0, s_0, r_0 zero), float32 (the pops' max(0, ·) branches are decided at exact zeros)."""
        if self.interface is None:
            return None
        return self.interface.initial_state(batch, capacity, dtype=torch.float32)

    def forward(self, inputs: torch.Tensor, mask: torch.Tensor, hidden: torch.Tensor, cell: torch.Tensor,
                memory: MemoryState | None):
        """Run over inputs (B, T, I) from (hidden, cell) (L, B, H) and `memory` (stepped in place), frozen where
        mask (B, T) is 0. Returns the top layer's states (B, T, H) and the final (hidden, cell)."""
        masks = step_masks(mask, static_shapes_active(self.config))
        if self.interface is None:
            return self._deep(inputs, masks, hidden, cell)
        return self._controller(inputs, masks, hidden, cell, memory)

    def _layer(self, layer: int):
        lstm = self.lstm
        bias = getattr(lstm, f"bias_ih_l{layer}") + getattr(lstm, f"bias_hh_l{layer}")
        return getattr(lstm, f"weight_ih_l{layer}"), getattr(lstm, f"weight_hh_l{layer}"), bias

    def _deep(self, inputs, masks, hidden, cell):
        """Layer by layer (nothing feeds back from above): each layer's input projection is one matmul."""
        finals_hidden, finals_cell = [], []
        layer_input = inputs
        for layer in range(self.num_layers):
            if layer:
                layer_input = F.dropout(layer_input, self.layer_dropout, self.training)
            layer_input, h, c = masked_layer_from(layer_input, masks, *self._layer(layer), hidden[layer], cell[layer])
            finals_hidden.append(h)
            finals_cell.append(c)
        return layer_input, torch.stack(finals_hidden), torch.stack(finals_cell)

    def _controller(self, inputs, masks, hidden, cell, memory: MemoryState):
        """Position by position: the read r_{t-1} enters layer 0 at t, so no layer can run ahead."""
        embedding_size = inputs.shape[-1]
        weights = []  # per layer: (weight over [input; h], bias); layer 0's input is the read, its embedding part
        for layer in range(self.num_layers):  # is projected for all positions at once
            w_ih, w_hh, bias = self._layer(layer)
            weights.append((torch.cat([w_ih[:, embedding_size:] if layer == 0 else w_ih, w_hh], 1), bias))
        embedding_gates = F.linear(inputs, self._layer(0)[0][:, :embedding_size], weights[0][1]).unbind(1)
        w_controls, b_controls = self.interface.merged_controls()
        ends, memory_module = self.interface.memory.num_ends, self.interface.memory
        hidden, cell = list(hidden.unbind(0)), list(cell.unbind(0))
        read, outputs = memory.read.to(inputs.dtype), []
        for step in range(inputs.shape[1]):
            below = read
            for layer, (weight, bias) in enumerate(weights):
                known = embedding_gates[step] if layer == 0 else bias
                if layer:
                    below = F.dropout(below, self.layer_dropout, self.training)
                new_hidden, new_cell = lstm_cell(torch.addmm(known, torch.cat([below, hidden[layer]], 1), weight.t()),
                                                 cell[layer])
                hidden[layer] = kept(masks[step], new_hidden, hidden[layer])
                cell[layer] = kept(masks[step], new_cell, cell[layer])
                below = new_hidden
            controls = torch.addmm(b_controls, below, w_controls.t()).float()  # (B, 2E + E·m): d, u, v
            push, pop = torch.sigmoid(controls[:, :ends]), torch.sigmoid(controls[:, ends:2 * ends])
            value = torch.tanh(controls[:, 2 * ends:])
            read = memory_module(memory, push, pop, value, mask=masks[step]).to(inputs.dtype)  # r_t (B, E·m)
            outputs.append(below)
        return torch.stack(outputs, dim=1), torch.stack(hidden), torch.stack(cell)

    def output_features(self, states: torch.Tensor) -> torch.Tensor:
        """o_t = tanh(W_o h_t + b_o) for a controller, h_t for the deep LSTM. (B, T, H) -> (B, T, H)."""
        return states if self.interface is None else torch.tanh(self.interface.output(states))


def restored_memory(recurrence: JointRecurrence, encoder_outputs: JointEncoderOutput, capacity_steps: int):
    """A fresh `MemoryState` holding the encoder's memory, with room for `capacity_steps` more steps before its
    buffer grows. The occupied rows are copied in (differentiably); the encoder's tensors are not written."""
    values = encoder_outputs.memory_values  # (B, n, m)
    batch, rows, _ = values.shape
    ends = recurrence.interface.memory.num_ends
    steps = rows // ends
    state = recurrence.new_memory(batch, steps + capacity_steps)
    if ends == 2:  # the DeQue's buffer fills outwards from its middle: after k steps, rows [C - k, C + k)
        state.start -= steps
    if rows:
        state.write_rows(state.start, values.to(state.values.dtype))
    state.strengths = encoder_outputs.memory_strengths.to(state.values.dtype)
    state.read = encoder_outputs.memory_read.to(state.values.dtype)
    state.steps = steps
    return state


# ----- encoder, decoder, backbone -------------------------------------------------------------------------------------

class JointEncoder(nn.Module):
    """Reads the source part of the joint sequence. Holds the source embeddings; the recurrence is the backbone's."""

    main_input_name = "input_ids"

    def __init__(self, config, recurrence: JointRecurrence):
        super().__init__()
        self.pad_token_id, self.source_vocab_size = config.pad_token_id, config.source_vocab_size
        self.embed_tokens = nn.Embedding(config.source_vocab_size, config.embedding_size, config.pad_token_id)
        self.dropout = nn.Dropout(config.dropout)
        object.__setattr__(self, "recurrence", recurrence)  # shared with the decoder, registered by the backbone

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embed_tokens = value

    def forward(self, input_ids: torch.LongTensor, attention_mask: torch.Tensor | None = None, return_dict: bool = True,
                output_attentions: bool | None = None, output_hidden_states: bool | None = None,
                **kwargs) -> JointEncoderOutput:
        attention_mask = check_source(input_ids, attention_mask, self.pad_token_id, self.source_vocab_size)
        batch, length = input_ids.shape
        embedded = self.dropout(self.embed_tokens(input_ids))  # (B, S, I)
        hidden, cell = self.recurrence.initial_state(batch)
        memory = self.recurrence.new_memory(batch, capacity=length)
        states, hidden, cell = self.recurrence(embedded, attention_mask, hidden, cell, memory)
        states = states * attention_mask.unsqueeze(-1).to(states.dtype)  # (B, S, H), zero on padding
        return JointEncoderOutput(
            last_hidden_state=states, source_ids=input_ids, final_hidden=hidden.transpose(0, 1),
            final_cell=cell.transpose(0, 1), hidden_states=(states,) if output_hidden_states else None,
            memory_values=None if memory is None else memory.occupied_values(),
            memory_strengths=None if memory is None else memory.strengths,
            memory_read=None if memory is None else memory.read,
        )


class JointDecoder(nn.Module):
    """Continues the recurrence through the separator ``<s>`` and the target, with the target embeddings."""

    def __init__(self, config, recurrence: JointRecurrence):
        super().__init__()
        self.pad_token_id, self.max_decode_length = config.pad_token_id, config.max_decode_length
        self.embed_tokens = nn.Embedding(config.target_vocab_size, config.embedding_size, config.pad_token_id)
        self.dropout = nn.Dropout(config.dropout)
        object.__setattr__(self, "recurrence", recurrence)

    def initial_cache(self, encoder_outputs: JointEncoderOutput, steps: int) -> JointSequenceCache:
        """The state after the source. The memory gets room for `steps` target positions (training: exactly, since
        the backward pass costs in proportion to the buffer; decoding: the length cap too, so it rarely grows)."""
        hidden = encoder_outputs.final_hidden.transpose(0, 1)
        cell = encoder_outputs.final_cell.transpose(0, 1)
        memory = None
        if encoder_outputs.memory_values is not None:
            room = steps if torch.is_grad_enabled() else max(steps, self.max_decode_length) + 1
            memory = restored_memory(self.recurrence, encoder_outputs, room)
        return JointSequenceCache(hidden, cell, memory)

    def forward(self, decoder_input_ids: torch.LongTensor, encoder_outputs: JointEncoderOutput,
                attention_mask: torch.Tensor, cache: JointSequenceCache | None = None,
                target_lengths: torch.Tensor | None = None):
        """Run over `decoder_input_ids` (B, T) from `cache` (or the encoder's final state).

        Returns `(features (B, T, H), gate_features (B, T, H), attention (B, T, S), cache)`: the cache is a new object
        and the one passed in keeps its contents. `target_lengths` is not needed (padding is read from the pad ids)."""
        batch, steps = decoder_input_ids.shape
        if cache is None:
            cache = self.initial_cache(encoder_outputs, steps)
            memory = cache.memory  # a new state of its own
        else:
            memory = cache.continued_memory()
        embedded = self.dropout(self.embed_tokens(decoder_input_ids))  # (B, T, I)
        states, hidden, cell = self.recurrence(embedded, decoder_input_ids.ne(self.pad_token_id), cache.hidden,
                                               cache.cell, memory)
        features = self.recurrence.output_features(states)
        # no attention: α spread evenly over the source tokens, a distribution that lexical_mode="none" never reads
        tokens = attention_mask.to(features.dtype)
        attention = (tokens / tokens.sum(-1, keepdim=True)).unsqueeze(1).expand(batch, steps, -1)
        return features, states, attention, JointSequenceCache(hidden, cell, memory, cache.seq_length + steps)


class JointSequenceBackbone(Backbone):
    """Base of the four backbones: one recurrence over the joint sequence (see the module docstring)."""

    memory_kind: str | None = None
    has_source_attention = False

    @classmethod
    def validate_config(cls, config) -> None:
        if config.num_layers < 1:
            raise ValueError(f"num_layers must be >= 1 for backbone={config.backbone!r}, got {config.num_layers}")
        if cls.memory_kind is not None and config.memory_width < 1:
            raise ValueError(f"memory_width must be >= 1, got {config.memory_width}")
        for name in ("memory_push_bias", "memory_bottom_push_bias"):
            value = getattr(config, name)
            if value is not None and not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number or None, got {value}")

    def __init__(self, config):
        super().__init__()
        self.recurrence = JointRecurrence(config, self.memory_kind)
        self.encoder = JointEncoder(config, self.recurrence)
        target_recurrence = self.recurrence
        if config.separate_target_lstm:
            self.target_recurrence = target_recurrence = JointRecurrence(config, self.memory_kind,
                                                                         shared_interface=self.recurrence.interface)
        self.decoder = JointDecoder(config, target_recurrence)
        self.feature_size = self.gate_feature_size = config.hidden_size


class DeepLSTM(JointSequenceBackbone):
    """A deep LSTM over the joint sequence (`num_layers` layers): the paper's baseline."""

    display_name = "deep LSTM"
    config_options = ("separate_target_lstm",)


class StackLSTM(JointSequenceBackbone):
    """An LSTM controller with a continuous stack (eq. 1-3 of the paper)."""

    display_name = "Stack-LSTM"
    config_options = ("memory_width", "separate_target_lstm", "memory_push_bias")
    memory_kind = "stack"


class QueueLSTM(JointSequenceBackbone):
    """An LSTM controller with a continuous queue (eq. 4-5)."""

    display_name = "Queue-LSTM"
    config_options = ("memory_width", "separate_target_lstm", "memory_push_bias")
    memory_kind = "queue"


class DequeLSTM(JointSequenceBackbone):
    """An LSTM controller with a continuous double-ended queue (eq. 6-11)."""

    display_name = "DeQue-LSTM"
    config_options = ("memory_width", "separate_target_lstm", "memory_push_bias", "memory_bottom_push_bias")
    memory_kind = "deque"
