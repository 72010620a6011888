"""Shared machinery for recurrent backbones: the LSTM cell, a masked recurrence over padded sequences, and the switch
between the eager path and the static-shape path that `torch.compile` and CUDA graphs need.

Two ways to run a recurrence over a right-padded batch:

* eager (the default on a CPU): `nn.LSTM` over packed sequences in the encoder, and a decoder that drops each row once
  its target is over. Fewest FLOPs, but the shapes change from step to step, and the row counts come from the host
  (`.tolist()`), so every step is a new graph and a synchronisation.
* static (`static_shapes_active`): every row runs every position, and padding positions leave the state unchanged
  (`masked_lstm_layer`); no host synchronisation, one shape per batch shape. Rows past their end compute values
  that the loss never reads. The features at real positions equal the eager path's up to float rounding.

`lstm_cell` is the pointwise part of an LSTM step. On CUDA outside a compiled region it is the fused kernel
(`aten._thnn_fused_lstm_cell`: one launch instead of about ten); elsewhere it is written out, and `torch.compile`
fuses it.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.rnn import PackedSequence

from .common import in_functorch_transform, in_graph


class LSTMWeights(nn.Module):
    """The weights of a (multi-layer, optionally bidirectional) LSTM, under `nn.LSTM`'s parameter names, order and
    initialisation, in a module that is not an `nn.LSTM`: `torch.compile` refuses to trace code that reads an
    `nn.LSTM` module, so the recurrent backbones keep their weights here and run the recurrence themselves
    (`packed_forward` runs `nn.LSTM`'s own kernel, `masked_lstm` the static-shape recurrence).

    Parameters per layer l and direction (suffix ``""`` or ``"_reverse"``): ``weight_ih_l{l}`` (4H, I),
    ``weight_hh_l{l}`` (4H, H), ``bias_ih_l{l}`` (4H,), ``bias_hh_l{l}`` (4H,), in PyTorch's gate order (input,
    forget, candidate, output); I is the input size of layer 0, else H times the directions.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int, dropout: float = 0.0,
                 bidirectional: bool = False):
        super().__init__()
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.dropout, self.bidirectional = float(dropout), bidirectional
        directions = 2 if bidirectional else 1
        self.weight_names = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size * directions
            for suffix in ("", "_reverse")[:directions]:
                shapes = {"weight_ih": (4 * hidden_size, layer_input), "weight_hh": (4 * hidden_size, hidden_size),
                          "bias_ih": (4 * hidden_size,), "bias_hh": (4 * hidden_size,)}
                for kind, shape in shapes.items():
                    name = f"{kind}_l{layer}{suffix}"
                    self.register_parameter(name, nn.Parameter(torch.empty(shape)))
                    self.weight_names.append(name)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """`nn.LSTM`'s initialisation: every weight and bias uniform in ±1/√H, in parameter order."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            nn.init.uniform_(weight, -bound, bound)

    def packed_forward(self, packed: PackedSequence):
        """What `nn.LSTM(packed)` returns with a zero initial state: (PackedSequence, (hidden, cell)), the final states
        (layers·directions, B, H) in the batch's own row order."""
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        directions = 2 if self.bidirectional else 1
        zeros = data.new_zeros(self.num_layers * directions, int(batch_sizes[0]), self.hidden_size)
        output, hidden, cell = torch._VF.lstm(data, batch_sizes, (zeros, zeros),
                                              [getattr(self, name) for name in self.weight_names], True,
                                              self.num_layers, self.dropout, self.training, self.bidirectional)
        if unsorted_indices is not None:
            hidden, cell = hidden.index_select(1, unsorted_indices), cell.index_select(1, unsorted_indices)
        return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), (hidden, cell)


def static_shapes_active(config) -> bool:
    """Whether a backbone should run its static-shape path: `config.static_shapes`, or inside a graph (traced by
    `torch.compile` or captured into a CUDA graph), where the dynamic path's host reads are impossible."""
    return bool(getattr(config, "static_shapes", False)) or in_graph()


def lstm_cell(gates: torch.Tensor, cell: torch.Tensor, extra_gates: torch.Tensor | None = None):
    """One LSTM step's pointwise part, PyTorch's gate order (input, forget, candidate, output).

    gates (B, 4H) [+ extra_gates (B, 4H)], cell (B, H) → hidden (B, H), cell (B, H):
        c' = σ(f) ⊙ c + σ(i) ⊙ tanh(g),   h' = σ(o) ⊙ tanh(c')
    """
    if gates.is_cuda and not torch.compiler.is_compiling() and not in_functorch_transform():  # no batching rule
        extra_gates = torch.zeros_like(gates) if extra_gates is None else extra_gates.contiguous()
        hidden, cell, _ = torch.ops.aten._thnn_fused_lstm_cell(gates.contiguous(), extra_gates, cell.contiguous())
        return hidden, cell
    if extra_gates is not None:
        gates = gates + extra_gates
    input_gate, forget_gate, candidate, output_gate = gates.chunk(4, dim=-1)
    cell = torch.sigmoid(forget_gate) * cell + torch.sigmoid(input_gate) * torch.tanh(candidate)
    return torch.sigmoid(output_gate) * torch.tanh(cell), cell


def masked_lstm_layer(inputs: torch.Tensor, mask: torch.Tensor, weight_ih: torch.Tensor, weight_hh: torch.Tensor,
                      bias: torch.Tensor, reverse: bool = False):
    """One LSTM layer (one direction) over a padded batch, with the state frozen on padding positions.

    inputs (B, S, I), mask (B, S) 1 on real tokens, weights as `nn.LSTM` stores them ((4H, I), (4H, H)), bias
    b_ih + b_hh (4H,). Returns outputs (B, S, H) (zeros on padding), final hidden (B, H) and final cell (B, H): the
    state after each row's last real token (after its first, with `reverse`), as a packed `nn.LSTM` gives them.
    """
    batch, steps, _ = inputs.shape
    hidden_size = weight_hh.shape[1]
    input_gates = F.linear(inputs, weight_ih, bias).unbind(1)  # S × (B, 4H): the input projection for all positions
    keep = mask.to(inputs.dtype).unsqueeze(-1).unbind(1)  # S × (B, 1)
    hidden = inputs.new_zeros(batch, hidden_size)
    cell = inputs.new_zeros(batch, hidden_size)
    outputs = [None] * steps
    for step in (range(steps - 1, -1, -1) if reverse else range(steps)):
        new_hidden, new_cell = lstm_cell(F.linear(hidden, weight_hh), cell, input_gates[step])
        hidden = torch.lerp(hidden, new_hidden, keep[step])  # keep ∈ {0, 1}: the new state on tokens, the old on padding
        cell = torch.lerp(cell, new_cell, keep[step])
        outputs[step] = new_hidden * keep[step]
    return torch.stack(outputs, dim=1), hidden, cell


def masked_lstm(lstm: LSTMWeights, inputs: torch.Tensor, mask: torch.Tensor, training: bool):
    """The LSTM's computation over a padded batch with `masked_lstm_layer`: outputs (B, S, D·H) and final hidden /
    cell (layers·D, B, H), laid out as `LSTMWeights.packed_forward` (and `nn.LSTM`) return them. Dropout between
    layers as `nn.LSTM` applies it (other random draws)."""
    finals_hidden, finals_cell = [], []
    layer_input = inputs
    directions = 2 if lstm.bidirectional else 1
    for layer in range(lstm.num_layers):
        outputs = []
        for direction in range(directions):
            suffix = f"_l{layer}" + ("_reverse" if direction else "")
            output, hidden, cell = masked_lstm_layer(
                layer_input, mask, getattr(lstm, f"weight_ih{suffix}"), getattr(lstm, f"weight_hh{suffix}"),
                getattr(lstm, f"bias_ih{suffix}") + getattr(lstm, f"bias_hh{suffix}"), reverse=bool(direction))
            outputs.append(output)
            finals_hidden.append(hidden)
            finals_cell.append(cell)
        layer_input = torch.cat(outputs, -1) if directions == 2 else outputs[0]
        if layer < lstm.num_layers - 1:
            layer_input = F.dropout(layer_input, lstm.dropout, training)
    return layer_input, torch.stack(finals_hidden), torch.stack(finals_cell)
