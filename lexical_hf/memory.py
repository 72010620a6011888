"""Continuous Stack, Queue and DeQue of Grefenstette et al. (2015), "Learning to Transduce with Unbounded Memory".

A memory holds value rows ``V`` (each of width ``m``) with a strength in [0, 1] each. At every step a recurrent
controller gives a push strength ``d_t``, a pop strength ``u_t`` (both in (0, 1)) and a value ``v_t`` (in R^m); the
memory pops, then pushes, then reads. Stack (eq. 1-3)::

    V_t[i] = V_{t-1}[i] for i < t,   V_t[t] = v_t                                   (rows are never modified)
    s_t[i] = max(0, s_{t-1}[i] - max(0, u_t - sum_{j=i+1}^{t-1} s_{t-1}[j]))   for i < t,   s_t[t] = d_t
    r_t    = sum_{i=1}^{t} min(s_t[i], max(0, 1 - sum_{j=i+1}^{t} s_t[j])) V_t[i]

The Queue (eq. 4-5) is the same with the sums over ``j < i``: it pops and reads from the bottom (oldest rows) and
pushes on top. The DeQue (eq. 6-11) is two stacks back to back, with (d, u, v) for each end: the top pop runs over
all old rows, then the bottom pop over the result; ``v^bot`` enters below row 1 and ``v^top`` above the last row;
``r^top`` is the stack read (sums above) and ``r^bot`` the queue read (sums below), both over all 2t rows.

Gradients. The paper differentiates ``max`` and ``min`` with respect to their left argument at ties. For
``max(0, x)`` the left argument is the constant 0, so the derivative in ``x`` is 0 at ``x = 0`` — what
``torch.relu`` does (:func:`max0`). For ``min(a, b)`` all of the gradient goes to ``a`` at ``a = b``;
``torch.minimum`` would split it 0.5/0.5, so :func:`min_left` is a ``torch.where`` that picks ``a`` on ties.

Cost. Values live in a preallocated buffer (B, N, m) written in place at each step (no concatenation); a step
touches only the occupied rows: pops and read weights are flip/cumsum scans over the ``n`` strengths and the read
is one batched matrix product, so a forward step is O(n m) tensor work with no Python loop over rows. Backward is
O(n m) per step too: the buffer stays outside autograd's graph and the rows' gradients are accumulated beside it
(:class:`RowGradients`), so no step carries a gradient of the whole buffer.

Batching and padding. The batch shares one step counter and one buffer layout. ``mask[b] = 0`` marks a padded
step of row b: that row pushes a zero-strength row (invisible to every later pop and read: it adds exact zeros to
every sum), pops nothing, keeps its strengths and its last read. A padded row's reads therefore equal those of the
row run alone, with gradients to match (the tests check both).

Usage, one controller step (shapes for batch B, width m, E ends: 1 for Stack/Queue, 2 for DeQue)::

    memory = NeuralStack(width=m)
    state = memory.initial_state(batch_size=B, capacity=T)       # T steps fit before the buffer grows
    for t in range(T):
        read = memory(state, push[:, t], pop[:, t], value[:, t], mask=attention_mask[:, t])   # (B, E * m)

:class:`MemoryInterface` adds the controller's projections (``d, u, v, o`` from the controller output ``o'_t``,
pop bias initialised to -1 as in the paper's Appendix B).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.function import once_differentiable

MemoryKind = Literal["stack", "queue", "deque"]

__all__ = [
    "MemoryControls",
    "MemoryInterface",
    "MemoryState",
    "NeuralDeque",
    "NeuralMemory",
    "NeuralQueue",
    "NeuralStack",
    "exclusive_prefix_sum",
    "exclusive_suffix_sum",
    "max0",
    "min_left",
    "neural_memory",
    "pop_bottom",
    "pop_top",
    "read_weights_bottom",
    "read_weights_top",
]


# ----- the paper's operations on a strength vector (B, n): pure functions ---------------------------------------------

def max0(x: torch.Tensor) -> torch.Tensor:
    """max(0, x), differentiated w.r.t. the left argument (the constant 0) at the tie x = 0: gradient 0 there."""
    return torch.relu(x)


def min_left(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """min(a, b) whose gradient goes entirely to ``a`` at ties (``torch.minimum`` would give each half)."""
    return torch.where(a <= b, a, b)


def exclusive_suffix_sum(x: torch.Tensor) -> torch.Tensor:
    """``out[..., i] = sum_{j > i} x[..., j]``: what lies above row i. (..., n) -> (..., n).

    Computed as flip -> cumsum -> flip, shifted by one place, never as ``total - cumsum`` nor ``inclusive - x``:
    with no subtraction, a row with nothing above it sees an exact 0.0, not a rounding residue, so the ``max(0, ·)``
    branches see the same numbers as a direct transcription of the equations.
    """
    if x.shape[-1] == 0:
        return x
    inclusive = x.flip(-1).cumsum(-1).flip(-1)  # (..., n): sum_{j >= i}
    return F.pad(inclusive[..., 1:], (0, 1))


def exclusive_prefix_sum(x: torch.Tensor) -> torch.Tensor:
    """``out[..., i] = sum_{j < i} x[..., j]``: what lies below row i. (..., n) -> (..., n)."""
    if x.shape[-1] == 0:
        return x
    return F.pad(x.cumsum(-1)[..., :-1], (1, 0))


def pop_top(strengths: torch.Tensor, pop: torch.Tensor) -> torch.Tensor:
    """Eq. (2)/(7): remove ``pop`` units of strength from the top down.

    ``s[i] <- max(0, s[i] - max(0, u - sum_{j>i} s[j]))``. strengths: (B, n); pop: (B,). Returns (B, n).
    """
    return max0(strengths - max0(pop[:, None] - exclusive_suffix_sum(strengths)))


def pop_bottom(strengths: torch.Tensor, pop: torch.Tensor) -> torch.Tensor:
    """Eq. (4)/(8): remove ``pop`` units of strength from the bottom up.

    ``s[i] <- max(0, s[i] - max(0, u - sum_{j<i} s[j]))``. strengths: (B, n); pop: (B,). Returns (B, n).
    """
    return max0(strengths - max0(pop[:, None] - exclusive_prefix_sum(strengths)))


def read_weights_top(strengths: torch.Tensor) -> torch.Tensor:
    """Eq. (3)/(10): read weights from the top, ``min(s[i], max(0, 1 - sum_{j>i} s[j]))``. (B, n) -> (B, n)."""
    return min_left(strengths, max0(1 - exclusive_suffix_sum(strengths)))


def read_weights_bottom(strengths: torch.Tensor) -> torch.Tensor:
    """Eq. (5)/(11): read weights from the bottom, ``min(s[i], max(0, 1 - sum_{j<i} s[j]))``. (B, n) -> (B, n)."""
    return min_left(strengths, max0(1 - exclusive_prefix_sum(strengths)))


class RowGradients:
    """The gradients of a value buffer's rows, kept outside autograd's graph.

    The buffer is written in place, one row per step, and read over all its occupied rows at every step. Were the
    writes and reads autograd operations on the buffer, every step's backward would carry a gradient of the whole
    buffer (zero-filled, then copied through each earlier write): O(N m) per step. Instead each read's backward adds
    its (B, n, m) gradient into :attr:`grad` here, and each write's backward takes its rows' gradient out (and zeros
    them, so that another backward pass starts clean). Autograd still orders the two: every write returns a new
    ``link`` (a 0-d tensor) that the next write and the reads take as input, so the backward of the write at step k
    runs after that of every read at a step >= k.

    Positions are buffer indices at the time of the operation; :attr:`shift` counts the rows added below the
    bottom since (the DeQue's buffer grows at both ends), so an index recorded with ``shift_then`` is
    ``index + shift - shift_then`` in the final buffer of :attr:`rows` rows.
    """

    def __init__(self, rows: int):
        self.rows, self.shift, self.grad = rows, 0, None

    def _rows(self, start: int, count: int, shift_then: int, like: torch.Tensor) -> torch.Tensor:
        """The (B, count, m) view of :attr:`grad` at rows ``start …`` (indices of the time ``shift_then``)."""
        if self.grad is None:
            self.grad = like.new_zeros(like.shape[0], self.rows, like.shape[-1])
        start += self.shift - shift_then
        return self.grad[:, start:start + count]

    def add(self, start: int, shift_then: int, grad: torch.Tensor) -> None:
        """Add ``grad`` (B, k, m) to rows ``start … start + k - 1``."""
        self._rows(start, grad.shape[1], shift_then, grad).add_(grad)

    def add_outer(self, start: int, shift_then: int, weights: torch.Tensor, grad: torch.Tensor) -> None:
        """Add ``weights^T @ grad`` to rows ``start …``: the gradient of a read ``weights @ rows``. weights (B, E, n),
        grad (B, E, m), E <= 2: one broadcast multiply-add per end, several times faster than a K = E ``bmm``."""
        rows = self._rows(start, weights.shape[2], shift_then, grad)  # (B, n, m)
        for end in range(weights.shape[1]):
            rows.addcmul_(weights[:, end, :, None], grad[:, end, None, :])

    def take(self, start: int, count: int, shift_then: int, like: torch.Tensor) -> torch.Tensor:
        """The gradient (B, count, m) of rows ``start …`` (zeros if no read reached them), zeroed here."""
        if self.grad is None:
            return torch.zeros_like(like)
        rows = self._rows(start, count, shift_then, like)
        taken = rows.clone()
        rows.zero_()
        return taken


class _WriteRows(torch.autograd.Function):
    """``buffer[:, start:start + k] = rows`` in place (outside autograd) and a new link; backward gives ``rows`` the
    gradient the reads left in `RowGradients`. See `RowGradients`."""

    @staticmethod
    def forward(ctx, link, rows, buffer, gradients: RowGradients, start: int):
        # link: () ; rows: (B, k, m) ; buffer: (B, N, m)
        buffer[:, start:start + rows.shape[1]] = rows
        ctx.gradients, ctx.start, ctx.count, ctx.shift = gradients, start, rows.shape[1], gradients.shift
        ctx.like = rows.new_zeros(()).expand(rows.shape)  # shape, dtype and device without keeping the rows
        return link.new_zeros(())

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_link):
        grad_rows = ctx.gradients.take(ctx.start, ctx.count, ctx.shift, ctx.like) if ctx.needs_input_grad[1] else None
        return grad_link, grad_rows, None, None, None


class _ReadRows(torch.autograd.Function):
    """``r[b, e] = sum_i w[b, e, i] V[b, i]`` over the occupied rows ``V = buffer[:, start:start + n]``.

    The rows are kept by reference (they are never written again); their gradient goes to `RowGradients`, not
    through autograd (see there), and the link orders this backward before the writes'.
    """

    @staticmethod
    def forward(ctx, weights, link, buffer, gradients: RowGradients, start: int):
        # weights: (B, E, n); buffer: (B, N, m) -> (B, E, m)
        values = buffer[:, start:start + weights.shape[2]]  # (B, n, m)
        ctx.save_for_backward(weights)
        ctx.values, ctx.gradients, ctx.start, ctx.shift = values, gradients, start, gradients.shift
        return torch.bmm(weights, values)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (weights,) = ctx.saved_tensors  # (B, E, n)
        grad_weights = torch.bmm(grad, ctx.values.transpose(1, 2)) if ctx.needs_input_grad[0] else None  # (B, E, n)
        grad_link = None
        if ctx.needs_input_grad[1]:
            ctx.gradients.add_outer(ctx.start, ctx.shift, weights, grad)  # (B, n, m) += w^T g
            grad_link = grad.new_zeros(())
        return grad_weights, grad_link, None, None, None


class _GatherRows(torch.autograd.Function):
    """A copy of the occupied rows ``buffer[:, start:start + n]`` (B, n, m), differentiable through `RowGradients`."""

    @staticmethod
    def forward(ctx, link, buffer, gradients: RowGradients, start: int, count: int):
        ctx.gradients, ctx.start, ctx.shift = gradients, start, gradients.shift
        return buffer[:, start:start + count].clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        ctx.gradients.add(ctx.start, ctx.shift, grad)
        return grad.new_zeros(()), None, None, None, None


# ----- state ----------------------------------------------------------------------------------------------------------

@dataclass
class MemoryState:
    """The memory of a batch after ``steps`` steps; updated in place by the memory's ``forward``.

    Attributes:
        values: (B, N, m) buffer of value rows. The occupied rows are ``values[:, start:start + n]``, bottom
            (paper's row 1) first; the rest is zeros. Occupied rows are never rewritten. The buffer itself is not
            part of autograd's graph: `link` and `gradients` carry the rows' gradients (see `RowGradients`).
        strengths: (B, n) strength of each occupied row (n = t for Stack/Queue, 2t for DeQue).
        read: (B, E * m) the last read r_t (zeros before the first step); DeQue: ``[r^top ; r^bot]``.
        start: buffer index of the bottom row (0 for Stack/Queue; the DeQue grows downwards from the middle).
        steps: t, the number of steps taken (padded steps included: the batch shares one counter).
        link: () the output of the last write (orders the backward passes of writes and reads).
        gradients: the rows' gradients during backward.
    """

    values: torch.Tensor
    strengths: torch.Tensor
    read: torch.Tensor
    start: int = 0
    steps: int = 0
    link: torch.Tensor | None = None
    gradients: RowGradients | None = None

    def __post_init__(self):
        if self.link is None:
            self.link = self.values.new_zeros(())
        if self.gradients is None:
            self.gradients = RowGradients(self.values.shape[1])

    @property
    def batch_size(self) -> int:
        return self.values.shape[0]

    @property
    def num_rows(self) -> int:
        """n, the number of occupied rows."""
        return self.strengths.shape[1]

    @property
    def buffer_rows(self) -> int:
        """N, the number of rows the buffer holds before it has to grow (E * the steps it was made for)."""
        return self.values.shape[1]

    def occupied_values(self) -> torch.Tensor:
        """(B, n, m) a copy of the occupied value rows, bottom first, differentiable w.r.t. the values written."""
        if torch.is_grad_enabled() and self.link.requires_grad:
            return _GatherRows.apply(self.link, self.values, self.gradients, self.start, self.num_rows)
        return self.values[:, self.start:self.start + self.num_rows].clone()

    def write_rows(self, index: int, rows: torch.Tensor) -> None:
        """Write ``rows`` (B, k, m) into buffer rows ``index … index + k - 1`` (in place, differentiably)."""
        if torch.is_grad_enabled() and rows.requires_grad:
            self.link = _WriteRows.apply(self.link, rows, self.values, self.gradients, index)
        else:  # nothing to differentiate (generation): a plain write
            self.values[:, index:index + rows.shape[1]] = rows

    def read_rows(self, weights: torch.Tensor) -> torch.Tensor:
        """``weights`` (B, E, n) applied to the occupied rows: (B, E, m)."""
        if torch.is_grad_enabled() and (weights.requires_grad or self.link.requires_grad):
            return _ReadRows.apply(weights, self.link, self.values, self.gradients, self.start)
        return torch.bmm(weights, self.values[:, self.start:self.start + weights.shape[2]])

    def select_rows(self, index: torch.Tensor) -> MemoryState:
        """A new state holding the batch rows ``index`` (B',) in that order (rows may repeat); copies the tensors
        (its buffer has the same layout, and gradients flow back to this state's rows)."""
        index = index.to(self.values.device)
        selected = MemoryState(values=torch.zeros_like(self.values[:1]).expand(len(index), -1, -1).contiguous(),
                               strengths=self.strengths.index_select(0, index), read=self.read.index_select(0, index),
                               start=self.start, steps=self.steps)
        if self.num_rows:
            selected.write_rows(self.start, self.occupied_values().index_select(0, index))
        return selected

    def reorder(self, beam_idx: torch.LongTensor) -> None:
        """Follow beam search's choice of parents, in place (as a ``transformers`` cache's ``reorder_cache``)."""
        selected = self.select_rows(beam_idx)
        self.values, self.strengths, self.read = selected.values, selected.strengths, selected.read
        self.link, self.gradients = selected.link, selected.gradients

    def __repr__(self) -> str:
        return (f"MemoryState(batch={self.batch_size}, steps={self.steps}, rows={self.num_rows}, "
                f"buffer_rows={self.buffer_rows}, width={self.values.shape[2]})")


# ----- the memories ---------------------------------------------------------------------------------------------------

class NeuralMemory(nn.Module):
    """Common step of the three memories (no parameters): validate, pop, push, write, read, respect the mask.

    Subclasses set ``num_ends`` (E) and implement :meth:`_pop`, :meth:`_push` and :meth:`_read_weights`.

    Args:
        width: m, the width of a value row.
    """

    num_ends: int = 1

    def __init__(self, width: int):
        super().__init__()
        if width < 1:
            raise ValueError(f"width must be positive, got {width}")
        self.width = width

    @property
    def read_size(self) -> int:
        """E * m, the size of a read (what the controller receives next step)."""
        return self.num_ends * self.width

    def extra_repr(self) -> str:
        return f"width={self.width}"

    def initial_state(self, batch_size: int, capacity: int = 64, *, dtype: torch.dtype | None = None,
                      device: torch.device | str | None = None) -> MemoryState:
        """The empty memory: V_0, s_0 and r_0 zero.

        Args:
            batch_size: B.
            capacity: the number of steps the buffer holds before it doubles (growing is allowed but copies the
                buffer, so give the sequence length when it is known).
        """
        capacity = max(1, capacity)
        return MemoryState(
            values=torch.zeros(batch_size, self.num_ends * capacity, self.width, dtype=dtype, device=device),
            strengths=torch.zeros(batch_size, 0, dtype=dtype, device=device),
            read=torch.zeros(batch_size, self.read_size, dtype=dtype, device=device),
            start=self._initial_start(capacity),
        )

    def forward(self, state: MemoryState, push: torch.Tensor, pop: torch.Tensor, value: torch.Tensor,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        """One step t: pop u_t, push d_t with value v_t, read. Updates ``state`` in place and returns r_t.

        Args:
            state: the memory after step t - 1 (see :class:`MemoryState`).
            push: d_t, (B, E) (or (B,) when E = 1), in [0, 1]. DeQue ends are ordered (top, bottom).
            pop: u_t, (B, E) (or (B,) when E = 1), in [0, 1].
            value: v_t, (B, E, m) or (B, E * m).
            mask: (B,) 1/True for a real step, 0/False for padding (the row's memory and read stay as they were).

        Returns:
            r_t, (B, E * m); also stored as ``state.read``.
        """
        push, pop, value = self._check(state, push, pop, value)  # (B, E), (B, E), (B, E, m)
        keep = None if mask is None else self._check_mask(state, mask)  # (B,) bool
        if keep is not None:
            push = torch.where(keep[:, None], push, 0)  # a padded step pushes an invisible row...
            value = torch.where(keep[:, None, None], value, 0)
        self._reserve(state)
        popped = self._pop(state.strengths, pop)  # (B, n)
        if keep is not None:
            popped = torch.where(keep[:, None], popped, state.strengths)  # ...and pops nothing
        strengths = self._push(state, popped, push, value)  # (B, n + E); writes the buffer
        weights = self._read_weights(strengths)  # (B, E, n + E)
        state.strengths = strengths
        read = state.read_rows(weights).flatten(1)  # (B, E * m)
        if keep is not None:
            read = torch.where(keep[:, None], read, state.read)
        state.read = read
        state.steps += 1
        return read

    # ----- per-structure parts ---------------------------------------------------------------------------------
    def _initial_start(self, capacity: int) -> int:
        return 0

    def _pop(self, strengths: torch.Tensor, pop: torch.Tensor) -> torch.Tensor:
        """(B, n), (B, E) -> (B, n)."""
        raise NotImplementedError

    def _push(self, state: MemoryState, strengths: torch.Tensor, push: torch.Tensor, value: torch.Tensor):
        """Write ``value`` (B, E, m) into the buffer and return the strengths with ``push`` (B, E) added."""
        raise NotImplementedError

    def _read_weights(self, strengths: torch.Tensor) -> torch.Tensor:
        """(B, n) -> (B, E, n)."""
        raise NotImplementedError

    # ----- machinery -------------------------------------------------------------------------------------------
    def _reserve(self, state: MemoryState) -> None:
        """Double the buffer when the next step's rows do not fit (the occupied rows keep their order)."""
        end = state.start + state.num_rows
        below = 1 if self.num_ends == 2 else 0
        if state.start - below >= 0 and end + 1 <= state.buffer_rows:
            return
        grow = state.buffer_rows // self.num_ends  # rows added at each growing end
        zeros = state.values.new_zeros(state.batch_size, grow, self.width)
        parts = [zeros, state.values, zeros] if self.num_ends == 2 else [state.values, zeros]
        state.values = torch.cat(parts, dim=1)
        gradients = state.gradients  # the rows' gradients follow the new layout
        gradients.rows, gradients.shift = state.buffer_rows, gradients.shift + (grow if self.num_ends == 2 else 0)
        if gradients.grad is not None:
            zeros = gradients.grad.new_zeros(state.batch_size, grow, self.width)
            gradients.grad = torch.cat([zeros, gradients.grad, zeros] if self.num_ends == 2 else [gradients.grad, zeros], 1)
        state.start += grow if self.num_ends == 2 else 0

    def _check(self, state, push, pop, value):
        batch, ends, width = state.batch_size, self.num_ends, self.width
        if state.values.shape[2] != width:
            raise ValueError(f"the state has width {state.values.shape[2]}, this {type(self).__name__} {width}")
        controls = {}
        for name, tensor in (("push", push), ("pop", pop)):
            if tensor.shape == (batch,) and ends == 1:
                tensor = tensor[:, None]
            if tensor.shape != (batch, ends):
                raise ValueError(f"{name} must have shape ({batch}, {ends}), got {tuple(tensor.shape)}")
            controls[name] = tensor
        if value.shape == (batch, ends * width):
            value = value.view(batch, ends, width)
        if value.shape != (batch, ends, width):
            raise ValueError(f"value must have shape ({batch}, {ends}, {width}) or ({batch}, {ends * width}), "
                             f"got {tuple(value.shape)}")
        return controls["push"], controls["pop"], value

    @staticmethod
    def _check_mask(state, mask):
        if mask.shape != (state.batch_size,):
            raise ValueError(f"mask must have shape ({state.batch_size},), got {tuple(mask.shape)}")
        return mask.to(device=state.values.device, dtype=torch.bool)


class _OneEndedMemory(NeuralMemory):
    """Stack and Queue: one (d, u, v) per step; the new row goes on top. State: values (B, N, m), strengths
    (B, t), read (B, m)."""

    num_ends = 1

    def _push(self, state, strengths, push, value):
        state.write_rows(state.start + state.num_rows, value)  # (B, 1, m) on top
        return torch.cat([strengths, push], dim=1)


class NeuralStack(_OneEndedMemory):
    """Continuous stack (eq. 1-3): pops from the top, pushes on top, reads from the top. E = 1.

    Per step, with n = t - 1 rows: ``s <- pop_top(s, u_t)``; append row (v_t, d_t);
    ``r_t = read_weights_top(s) @ V``.
    """

    def _pop(self, strengths, pop):
        return pop_top(strengths, pop[:, 0])

    def _read_weights(self, strengths):
        return read_weights_top(strengths)[:, None]


class NeuralQueue(_OneEndedMemory):
    """Continuous queue (eq. 4-5): pops from the bottom, pushes on top, reads from the bottom. E = 1.

    Per step, with n = t - 1 rows: ``s <- pop_bottom(s, u_t)``; append row (v_t, d_t);
    ``r_t = read_weights_bottom(s) @ V``.
    """

    def _pop(self, strengths, pop):
        return pop_bottom(strengths, pop[:, 0])

    def _read_weights(self, strengths):
        return read_weights_bottom(strengths)[:, None]


class NeuralDeque(NeuralMemory):
    """Continuous double-ended queue (eq. 6-11). E = 2, ends ordered (top, bottom) in every (B, E, ...) tensor.

    Per step, with n = 2(t - 1) rows: ``s <- pop_bottom(pop_top(s, u^top), u^bot)`` (top first, both over all old
    rows); v^bot enters below the bottom row with d^bot and v^top above the top row with d^top (n + 2 rows);
    ``r^top = read_weights_top(s) @ V``, ``r^bot = read_weights_bottom(s) @ V``; returns ``[r^top ; r^bot]``.
    The buffer (B, 2 * capacity, m) fills outwards from its middle, so the paper's index shift (eq. 6) moves no
    data. State: values (B, 2N, m), strengths (B, 2t), read (B, 2m).
    """

    num_ends = 2

    def _initial_start(self, capacity):
        return capacity

    def _pop(self, strengths, pop):
        return pop_bottom(pop_top(strengths, pop[:, 0]), pop[:, 1])

    def _push(self, state, strengths, push, value):
        top = state.start + state.num_rows
        state.start -= 1
        state.write_rows(state.start, value[:, 1:])  # v^bot below the bottom row
        state.write_rows(top, value[:, :1])  # v^top above the top row
        return torch.cat([push[:, 1:], strengths, push[:, :1]], dim=1)

    def _read_weights(self, strengths):
        return torch.stack([read_weights_top(strengths), read_weights_bottom(strengths)], dim=1)


_MEMORIES: dict[str, type[NeuralMemory]] = {"stack": NeuralStack, "queue": NeuralQueue, "deque": NeuralDeque}


def neural_memory(kind: MemoryKind, width: int) -> NeuralMemory:
    """``NeuralStack``, ``NeuralQueue`` or ``NeuralDeque`` of value width ``width``, by name."""
    if kind not in _MEMORIES:
        raise ValueError(f"unknown memory kind {kind!r}; available: {sorted(_MEMORIES)}")
    return _MEMORIES[kind](width)


# ----- the controller's side ------------------------------------------------------------------------------------------

@dataclass
class MemoryControls:
    """What the controller tells the memory at one step, and its layer output.

    Attributes:
        push: d_t = sigmoid(W_d o'_t + b_d), (B, E).
        pop: u_t = sigmoid(W_u o'_t + b_u), (B, E).
        value: v_t = tanh(W_v o'_t + b_v), (B, E, m).
        output: o_t = tanh(W_o o'_t + b_o), (B, O): the layer output (what the softmax reads).
    """

    push: torch.Tensor
    pop: torch.Tensor
    value: torch.Tensor
    output: torch.Tensor


class MemoryInterface(nn.Module):
    """The paper's controller-to-memory projections around one memory; not a controller itself.

    A controller (an LSTM cell in the paper) reads ``[i_t ; r_{t-1}]`` (``r`` of size :attr:`read_size`) and gives
    ``o'_t`` (B, H); this module maps it to::

        d_t = sigmoid(W_d o'_t + b_d)     u_t = sigmoid(W_u o'_t + b_u)     (B, E)
        v_t = tanh(W_v o'_t + b_v)        (B, E, m)
        o_t = tanh(W_o o'_t + b_o)        (B, O)

    steps the memory with (d_t, u_t, v_t) and returns ``(o_t, r_t)``. For the DeQue (E = 2) every projection but
    ``o`` has a top and a bottom half. The pop bias ``b_u`` starts at ``pop_bias`` = -1 (Appendix B of the paper:
    it made training reliable on every seed tried); the push bias ``b_d`` at ``push_bias`` if given; other weights
    have ``nn.Linear``'s default initialisation.

    Args:
        hidden_size: H, the size of the controller output o'_t.
        memory_width: m.
        kind: ``"stack"``, ``"queue"`` or ``"deque"``.
        output_size: O (default H).
        pop_bias: initial value of b_u.
        push_bias: initial value of b_d (None: ``nn.Linear``'s initialisation, the paper's).
    """

    def __init__(self, hidden_size: int, memory_width: int, kind: MemoryKind, output_size: int | None = None,
                 pop_bias: float = -1.0, push_bias: float | None = None):
        super().__init__()
        self.kind = kind
        self.memory = neural_memory(kind, memory_width)
        ends = self.memory.num_ends
        self.push = nn.Linear(hidden_size, ends)
        self.pop = nn.Linear(hidden_size, ends)
        self.value = nn.Linear(hidden_size, ends * memory_width)
        self.output = nn.Linear(hidden_size, output_size or hidden_size)
        with torch.no_grad():
            self.pop.bias.fill_(pop_bias)
            if push_bias is not None:
                self.push.bias.fill_(push_bias)

    @property
    def read_size(self) -> int:
        """E * m: the controller's extra input size (the read r_{t-1})."""
        return self.memory.read_size

    @property
    def output_size(self) -> int:
        return self.output.out_features

    def initial_state(self, batch_size: int, capacity: int = 64, *, dtype: torch.dtype | None = None,
                      device: torch.device | str | None = None) -> MemoryState:
        """The empty memory (V_0, s_0, r_0 zero) in this module's dtype and device unless given."""
        weight = self.value.weight
        return self.memory.initial_state(batch_size, capacity, dtype=dtype or weight.dtype,
                                         device=device or weight.device)

    def controls(self, controller_output: torch.Tensor) -> MemoryControls:
        """(d_t, u_t, v_t, o_t) from o'_t (B, H)."""
        batch = controller_output.shape[0]
        return MemoryControls(
            push=torch.sigmoid(self.push(controller_output)),  # (B, E)
            pop=torch.sigmoid(self.pop(controller_output)),  # (B, E)
            value=torch.tanh(self.value(controller_output)).view(batch, self.memory.num_ends, -1),  # (B, E, m)
            output=torch.tanh(self.output(controller_output)),  # (B, O)
        )

    def forward(self, controller_output: torch.Tensor, state: MemoryState,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """One step: o'_t (B, H) -> (o_t (B, O), r_t (B, E * m)); ``state`` is updated in place.

        ``mask`` (B,): 0 marks a padded step, which leaves the row's memory and read unchanged (see
        :meth:`NeuralMemory.forward`); the output o_t is computed for every row either way.
        """
        controls = self.controls(controller_output)
        read = self.memory(state, controls.push, controls.pop, controls.value, mask=mask)
        return controls.output, read
