"""The neural Stack, Queue and DeQue against a looped transcription of the paper's equations, and by hand."""

import pytest
import torch

import lexical_hf.memory as memory_module
from lexical_hf.memory import (
    MemoryInterface,
    NeuralDeque,
    NeuralQueue,
    NeuralStack,
    exclusive_prefix_sum,
    exclusive_suffix_sum,
    max0,
    min_left,
    neural_memory,
)

KINDS = ("stack", "queue", "deque")
ENDS = {"stack": 1, "queue": 1, "deque": 2}
F64 = torch.float64


# ----- the reference: one sequence, one row at a time, Python loops over scalars, float64 ---------------------------
# max and min take the left argument at ties, as the paper differentiates them: the branch taken is the one whose
# gradient flows.

def ref_max0(x):
    return x if x > 0 else x * 0  # at x == 0 the left argument (0) wins: no gradient to x


def ref_min(a, b):
    return a if a <= b else b  # at a == b the left argument wins


def ref_sum(entries):
    total = torch.zeros((), dtype=F64)
    for entry in entries:
        total = total + entry
    return total


def ref_pop(s, u, from_top):
    """s_t[i] = max(0, s[i] - max(0, u - sum of the strengths on the popped side of i))."""
    popped = []
    for i in range(len(s)):
        in_front = s[i + 1:] if from_top else s[:i]
        popped.append(ref_max0(s[i] - ref_max0(u - ref_sum(in_front))))
    return popped


def ref_read(s, V, from_top):
    """r = sum_i min(s[i], max(0, 1 - sum of the strengths on the read side of i)) V[i]."""
    read = torch.zeros(V[0].shape, dtype=F64)
    for i in range(len(s)):
        in_front = s[i + 1:] if from_top else s[:i]
        read = read + ref_min(s[i], ref_max0(1 - ref_sum(in_front))) * V[i]
    return read


def reference_reads(kind, push, pop, value):
    """Reads (T, E * m) of one sequence: push, pop (T, E); value (T, E, m); DeQue ends ordered (top, bottom)."""
    s, V, reads = [], [], []
    for t in range(push.shape[0]):
        if kind == "stack":  # eq. 1-3: pop from the top, push on top, read from the top
            s = ref_pop(s, pop[t, 0], from_top=True) + [push[t, 0]]
            V = V + [value[t, 0]]
            reads.append(ref_read(s, V, from_top=True))
        elif kind == "queue":  # eq. 4-5: pop from the bottom, push on top, read from the bottom
            s = ref_pop(s, pop[t, 0], from_top=False) + [push[t, 0]]
            V = V + [value[t, 0]]
            reads.append(ref_read(s, V, from_top=False))
        else:  # eq. 6-11: pop top then bottom over all old rows; v_bot below row 1, v_top above the last row
            s = ref_pop(ref_pop(s, pop[t, 0], from_top=True), pop[t, 1], from_top=False)
            s = [push[t, 1]] + s + [push[t, 0]]
            V = [value[t, 1]] + V + [value[t, 0]]
            reads.append(torch.cat([ref_read(s, V, from_top=True), ref_read(s, V, from_top=False)]))
    return torch.stack(reads)


# ----- helpers --------------------------------------------------------------------------------------------------------

def run(kind, push, pop, value, mask=None, capacity=None):
    """Reads (B, T, E * m) of the vectorised memory and its final state."""
    batch, steps = push.shape[:2]
    memory = neural_memory(kind, value.shape[-1])
    state = memory.initial_state(batch, capacity or steps, dtype=F64)
    reads = [memory(state, push[:, t], pop[:, t], value[:, t], mask=None if mask is None else mask[:, t])
             for t in range(steps)]
    return torch.stack(reads, dim=1), state


def random_inputs(kind, batch=3, steps=9, width=4, seed=0, grid=None):
    """push, pop (B, T, E) uniform in [0, 1] (or drawn from `grid`), value (B, T, E, m), all leaves."""
    generator = torch.Generator().manual_seed(seed)
    shape = (batch, steps, ENDS[kind])
    if grid is None:
        push, pop = torch.rand(shape, generator=generator, dtype=F64), torch.rand(shape, generator=generator, dtype=F64)
    else:
        grid = torch.tensor(grid, dtype=F64)
        push = grid[torch.randint(len(grid), shape, generator=generator)]
        pop = grid[torch.randint(len(grid), shape, generator=generator)]
    value = torch.randn(*shape, width, generator=generator, dtype=F64)
    return [tensor.requires_grad_() for tensor in (push, pop, value)]


def gradients(reads_fn, inputs, seed=1):
    """Reads and the gradients of a fixed random linear function of them w.r.t. `inputs`."""
    reads = reads_fn()
    weights = torch.randn(reads.shape, generator=torch.Generator().manual_seed(seed), dtype=F64)
    return reads, torch.autograd.grad((reads * weights).sum(), inputs)


def reference_batch(kind, push, pop, value):
    return torch.stack([reference_reads(kind, push[b], pop[b], value[b]) for b in range(push.shape[0])])


# ----- the elementary operations --------------------------------------------------------------------------------------

def test_min_left_gives_the_whole_gradient_to_the_left_argument_at_ties():
    a, b = torch.tensor(0.5, requires_grad=True), torch.tensor(0.5, requires_grad=True)
    assert torch.autograd.grad(min_left(a, b), (a, b)) == (torch.tensor(1.0), torch.tensor(0.0))
    # torch.minimum splits it, which is what min_left exists to avoid
    assert torch.autograd.grad(torch.minimum(a, b), (a, b)) == (torch.tensor(0.5), torch.tensor(0.5))
    # away from ties it is the ordinary minimum
    c = torch.tensor(0.25, requires_grad=True)
    assert torch.autograd.grad(min_left(a, c), (a, c)) == (torch.tensor(0.0), torch.tensor(1.0))


def test_max0_has_no_gradient_at_zero():
    # max(0, x): the left argument is the constant 0, so at the tie x = 0 the derivative in x is 0
    x = torch.tensor([0.0, 0.5, -0.5], requires_grad=True)
    (grad,) = torch.autograd.grad(max0(x).sum(), x)
    assert grad.tolist() == [0.0, 1.0, 0.0]


def test_exclusive_sums_match_loops_and_leave_no_rounding_residue():
    x = torch.tensor([[1.0, 0.1, 0.25, 0.5]], dtype=F64)
    loops_above = [[sum(x[0, j].item() for j in range(i + 1, 4)) for i in range(4)]]
    loops_below = [[sum(x[0, j].item() for j in range(i)) for i in range(4)]]
    torch.testing.assert_close(exclusive_suffix_sum(x), torch.tensor(loops_above, dtype=F64))
    torch.testing.assert_close(exclusive_prefix_sum(x), torch.tensor(loops_below, dtype=F64))
    # no subtraction: above row 0 lies exactly 0.1 + 0.25 + 0.5 summed from the top, and nothing above the top row.
    # (inclusive - x would give (1.0 + 0.85) - 1.0 = 0.8500000000000001 for row 0)
    assert exclusive_suffix_sum(x)[0, 0].item() == 0.5 + 0.25 + 0.1
    assert exclusive_suffix_sum(x)[0, 3].item() == 0.0
    assert exclusive_prefix_sum(x)[0, 0].item() == 0.0
    assert exclusive_suffix_sum(x[:, :0]).shape == (1, 0)


# ----- against the looped reference -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_matches_the_looped_equations_in_value_and_gradient(kind):
    inputs = random_inputs(kind)
    reads, grads = gradients(lambda: run(kind, *inputs)[0], inputs)
    expected_reads, expected_grads = gradients(lambda: reference_batch(kind, *inputs), inputs)
    torch.testing.assert_close(reads, expected_reads)
    for name, grad, expected in zip(("push", "pop", "value"), grads, expected_grads):
        torch.testing.assert_close(grad, expected, msg=lambda m: f"d/d{name}: {m}")
    assert 0 < reads.abs().max() < 10  # the inputs make the memory do something


# Push and pop strengths on a dyadic grid make every sum exact in any order, so the ties the paper's gradient rule
# decides (u equal to the strength above, a read weight equal to the room left) occur exactly, in both
# implementations.
TIE_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)


@pytest.mark.parametrize("kind", KINDS)
def test_matches_the_looped_equations_at_exact_ties(kind):
    inputs = random_inputs(kind, steps=10, seed=3, grid=TIE_GRID)
    reads, grads = gradients(lambda: run(kind, *inputs)[0], inputs)
    expected_reads, expected_grads = gradients(lambda: reference_batch(kind, *inputs), inputs)
    torch.testing.assert_close(reads, expected_reads, rtol=0, atol=1e-12)
    for name, grad, expected in zip(("push", "pop", "value"), grads, expected_grads):
        torch.testing.assert_close(grad, expected, rtol=0, atol=1e-12, msg=lambda m: f"d/d{name}: {m}")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("wrong_rule", ["torch.minimum", "max with the right argument"])
def test_the_tie_cases_tell_the_left_argument_rule_apart(kind, wrong_rule, monkeypatch):
    # The tie test above must fail for an implementation with another tie rule: swap one in and compare.
    if wrong_rule == "torch.minimum":
        monkeypatch.setattr(memory_module, "min_left", torch.minimum)
    else:  # max(0, x) with gradient 1 at x = 0
        monkeypatch.setattr(memory_module, "max0", lambda x: torch.where(x >= 0, x, torch.zeros_like(x)))
    inputs = random_inputs(kind, steps=10, seed=3, grid=TIE_GRID)
    reads, grads = gradients(lambda: run(kind, *inputs)[0], inputs)
    expected_reads, expected_grads = gradients(lambda: reference_batch(kind, *inputs), inputs)
    torch.testing.assert_close(reads, expected_reads)  # ties change no value...
    assert any(not torch.allclose(g, e) for g, e in zip(grads, expected_grads))  # ...only gradients


@pytest.mark.parametrize("kind", KINDS)
def test_gradcheck(kind):
    push, pop, value = (tensor.detach().requires_grad_() for tensor in random_inputs(kind, 2, 5, 3, seed=5))
    assert torch.autograd.gradcheck(lambda d, u, v: run(kind, d, u, v)[0], (push, pop, value))


# ----- worked by hand (values one-hot, so a read shows each row's weight) ---------------------------------------------

def step_by_hand(memory, state, push, pop, value):
    return memory(state, torch.tensor([push], dtype=F64), torch.tensor([pop], dtype=F64),
                  torch.tensor([value], dtype=F64))


def test_stack_by_hand():
    v1, v2, v3 = [1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]
    stack = NeuralStack(width=3)
    state = stack.initial_state(1, capacity=3, dtype=F64)
    # t=1: push 0.8 v1, pop 0 -> s = [0.8]; top read: min(0.8, 1) = 0.8 of v1
    read = step_by_hand(stack, state, 0.8, 0.0, v1)
    torch.testing.assert_close(read, torch.tensor([[0.8, 0, 0]], dtype=F64))
    # t=2: pop 0.1 takes 0.1 off v1 (0.7), push 0.5 v2 -> s = [0.7, 0.5]
    #      read: v2 min(0.5, 1) = 0.5; v1 min(0.7, 1 - 0.5) = 0.5
    read = step_by_hand(stack, state, 0.5, 0.1, v2)
    torch.testing.assert_close(state.strengths, torch.tensor([[0.7, 0.5]], dtype=F64))
    torch.testing.assert_close(read, torch.tensor([[0.5, 0.5, 0]], dtype=F64))
    # t=3: pop 0.9 removes v2's 0.5 (max(0, 0.5 - 0.9) = 0) and 0.4 of v1 (0.7 - max(0, 0.9 - 0.5) = 0.3);
    #      push 0.9 v3 -> s = [0.3, 0, 0.9]; read: v3 0.9, v2 min(0, ...) = 0, v1 min(0.3, 1 - 0.9) = 0.1
    read = step_by_hand(stack, state, 0.9, 0.9, v3)
    torch.testing.assert_close(state.strengths, torch.tensor([[0.3, 0.0, 0.9]], dtype=F64))
    torch.testing.assert_close(read, torch.tensor([[0.1, 0, 0.9]], dtype=F64))


def test_queue_by_hand():
    v1, v2, v3 = [1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]
    queue = NeuralQueue(width=3)
    state = queue.initial_state(1, capacity=3, dtype=F64)
    # t=1: push 0.8 v1 -> s = [0.8]; bottom read 0.8 of v1
    torch.testing.assert_close(step_by_hand(queue, state, 0.8, 0.0, v1), torch.tensor([[0.8, 0, 0]], dtype=F64))
    # t=2: pop 0.1 from the bottom (v1: 0.7), push 0.5 v2 -> s = [0.7, 0.5]
    #      bottom read: v1 min(0.7, 1) = 0.7; v2 min(0.5, 1 - 0.7) = 0.3
    read = step_by_hand(queue, state, 0.5, 0.1, v2)
    torch.testing.assert_close(read, torch.tensor([[0.7, 0.3, 0]], dtype=F64))
    # t=3: pop 0.9: v1 max(0, 0.7 - 0.9) = 0; v2 0.5 - max(0, 0.9 - 0.7) = 0.3; push 0.9 v3 -> s = [0, 0.3, 0.9]
    #      bottom read: v1 0, v2 min(0.3, 1 - 0) = 0.3, v3 min(0.9, 1 - 0.3) = 0.7
    read = step_by_hand(queue, state, 0.9, 0.9, v3)
    torch.testing.assert_close(state.strengths, torch.tensor([[0.0, 0.3, 0.9]], dtype=F64))
    torch.testing.assert_close(read, torch.tensor([[0, 0.3, 0.7]], dtype=F64))


def test_deque_by_hand():
    # one-hot values: a1 = e0, b1 = e1 (step 1, top and bottom); a2 = e2, b2 = e3 (step 2)
    a1, b1, a2, b2 = torch.eye(4, dtype=F64).tolist()
    deque = NeuralDeque(width=4)
    state = deque.initial_state(1, capacity=2, dtype=F64)
    # t=1: push top 0.8 a1, bottom 0.4 b1, no pops -> rows (bottom first) [b1, a1], s = [0.4, 0.8]
    #      r_top: a1 min(0.8, 1) = 0.8, b1 min(0.4, 1 - 0.8) = 0.2
    #      r_bot: b1 min(0.4, 1) = 0.4, a1 min(0.8, 1 - 0.4) = 0.6
    read = step_by_hand(deque, state, [0.8, 0.4], [0.0, 0.0], [a1, b1])
    torch.testing.assert_close(state.strengths, torch.tensor([[0.4, 0.8]], dtype=F64))
    torch.testing.assert_close(read, torch.tensor([[0.8, 0.2, 0, 0, 0.6, 0.4, 0, 0]], dtype=F64))
    # t=2: pop top 0.5: a1 0.8 - 0.5 = 0.3, b1 0.4 - max(0, 0.5 - 0.8) = 0.4      -> [0.4, 0.3]
    #      then pop bottom 0.3 on that: b1 0.4 - 0.3 = 0.1, a1 0.3 - max(0, 0.3 - 0.4) = 0.3 -> [0.1, 0.3]
    #      push bottom 0.7 b2, top 0.6 a2 -> rows [b2, b1, a1, a2], s = [0.7, 0.1, 0.3, 0.6]
    #      r_top: a2 0.6, a1 min(0.3, 0.4) = 0.3, b1 min(0.1, 0.1) = 0.1, b2 min(0.7, 0) = 0
    #      r_bot: b2 0.7, b1 min(0.1, 0.3) = 0.1, a1 min(0.3, 0.2) = 0.2, a2 min(0.6, 0) = 0
    read = step_by_hand(deque, state, [0.6, 0.7], [0.5, 0.3], [a2, b2])
    torch.testing.assert_close(state.strengths, torch.tensor([[0.7, 0.1, 0.3, 0.6]], dtype=F64))
    torch.testing.assert_close(state.occupied_values()[0], torch.tensor([b2, b1, a1, a2], dtype=F64))
    torch.testing.assert_close(read, torch.tensor([[0.3, 0.1, 0.6, 0, 0.2, 0.1, 0, 0.7]], dtype=F64))


@pytest.mark.parametrize("pop, push, weight, gradient", [
    (0.27, 0.50, 0.0, (0.0, 0.0)),  # the paper's initialisation: σ(-1) pops, σ(0) pushes
    (0.27, 0.27, 0.0, (0.0, 0.0)),  # a tie: the left argument (0) of max(0, ·) wins
    (0.27, 0.12, 0.15, (1.0, -1.0)),
    (0.50, 0.27, 0.23, (1.0, -1.0)),
])
def test_the_deque_top_read_reaches_the_next_row_only_where_the_pop_exceeds_the_push(pop, push, weight, gradient):
    # x1 above x2, both pushed at the bottom with strength 1 (a copy's source phase); then one step pops u and pushes
    # d at the top. r^top weighs the new row d, x1 min(1 - u, 1 - d), x2 max(0, u - d): the next symbol of the copy
    # enters the read, and its weight has a gradient, only where u > d.
    deque = NeuralDeque(width=3)
    state = deque.initial_state(1, capacity=3, dtype=F64)
    x1, x2, new = torch.eye(3, dtype=F64)
    zero = torch.zeros(3, dtype=F64)
    for row in (x1, x2):
        deque(state, torch.tensor([[0.0, 1.0]], dtype=F64), torch.zeros(1, 2, dtype=F64), torch.stack([zero, row])[None])
    u, d = torch.tensor(pop, dtype=F64, requires_grad=True), torch.tensor(push, dtype=F64, requires_grad=True)
    read = deque(state, torch.stack([d, d * 0])[None], torch.stack([u, u * 0])[None], torch.stack([new, zero])[None])
    top = read[0, :3]  # weights of x1, x2 and the new row
    expected = [min(1 - pop, 1 - push), max(0.0, pop - push), push]
    torch.testing.assert_close(top, torch.tensor(expected, dtype=F64))
    assert top[1].item() == pytest.approx(weight)
    assert tuple(g.item() for g in torch.autograd.grad(top[1], (u, d))) == pytest.approx(gradient)


def test_stack_tie_gradient_by_hand():
    # push 0.5 v1, then push 0.5 v2 (no pops). Read at t=2: w2 = min(0.5, 1) = 0.5 and
    # w1 = min(s1, max(0, 1 - s2)) = min(0.5, 0.5), a tie: all of its gradient goes to s1 = d1, none to s2 = d2.
    # So dr2/dd1 = v1 and dr2/dd2 = v2 (through w2 only); torch.minimum would give 0.5 v1 and v2 - 0.5 v1.
    stack = NeuralStack(width=2)
    state = stack.initial_state(1, dtype=F64)
    d1, d2 = torch.tensor([0.5], dtype=F64, requires_grad=True), torch.tensor([0.5], dtype=F64, requires_grad=True)
    zero = torch.zeros(1, dtype=F64)
    v1, v2 = torch.tensor([[1.0, 0.0]], dtype=F64), torch.tensor([[0.0, 1.0]], dtype=F64)
    stack(state, d1, zero, v1)
    read = stack(state, d2, zero, v2)
    torch.testing.assert_close(read, torch.tensor([[0.5, 0.5]], dtype=F64))
    jacobian = [torch.autograd.grad(read[0, k], (d1, d2), retain_graph=True) for k in range(2)]
    assert [[g.item() for g in row] for row in jacobian] == [[1.0, 0.0], [0.0, 1.0]]


# ----- batches, padding, beams, the buffer ----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_a_padded_batch_equals_each_row_alone(kind):
    push, pop, value = random_inputs(kind, batch=3, steps=8, seed=7)
    mask = torch.tensor([
        [1, 1, 1, 1, 1, 1, 1, 1],
        [0, 0, 0, 1, 1, 1, 1, 1],  # left padding
        [1, 1, 0, 1, 0, 0, 1, 0],  # padding inside and at the end
    ], dtype=torch.bool)
    loss_weights = torch.randn(3, 8, ENDS[kind] * 4, generator=torch.Generator().manual_seed(2), dtype=F64)
    reads, _ = run(kind, push, pop, value, mask=mask)
    batch_grads = torch.autograd.grad((reads * loss_weights * mask[..., None]).sum(), (push, pop, value))
    for row in range(3):
        real = mask[row].nonzero().squeeze(1)
        alone_inputs = [t[row:row + 1, real].detach().requires_grad_() for t in (push, pop, value)]
        alone, _ = run(kind, *alone_inputs)
        torch.testing.assert_close(reads[row, real], alone[0], rtol=0, atol=1e-14)
        alone_grads = torch.autograd.grad((alone * loss_weights[row:row + 1, real]).sum(), alone_inputs)
        for batch_grad, alone_grad in zip(batch_grads, alone_grads):
            torch.testing.assert_close(batch_grad[row, real], alone_grad[0], rtol=0, atol=1e-14)
            padded = ~mask[row]
            assert torch.all(batch_grad[row, padded] == 0)  # padded steps' inputs are ignored
        # a padded step keeps the last read (zeros before the first real step)
        previous = torch.zeros(ENDS[kind] * 4, dtype=F64)
        for t in range(8):
            if mask[row, t]:
                previous = reads[row, t]
            else:
                assert torch.equal(reads[row, t], previous)


@pytest.mark.parametrize("kind", KINDS)
def test_reorder_follows_beam_parents(kind):
    push, pop, value = (t.detach() for t in random_inputs(kind, batch=3, steps=7, seed=11))
    memory = neural_memory(kind, 4)
    state = memory.initial_state(3, capacity=7, dtype=F64)
    for t in range(4):
        memory(state, push[:, t], pop[:, t], value[:, t])
    beam_idx = torch.tensor([2, 0, 0])
    state.reorder(beam_idx)
    continued = [memory(state, push[:, t], pop[:, t], value[:, t]) for t in range(4, 7)]
    # from scratch: each new row's history is its parent's first 4 steps, then its own steps 4-6
    history = [torch.cat([x[beam_idx, :4], x[:, 4:]], dim=1) for x in (push, pop, value)]
    expected, expected_state = run(kind, *history)
    torch.testing.assert_close(torch.stack(continued, dim=1), expected[:, 4:])
    torch.testing.assert_close(state.strengths, expected_state.strengths)
    # select_rows returns a new state and leaves the old one alone
    picked = state.select_rows(torch.tensor([1]))
    assert picked.batch_size == 1 and state.batch_size == 3
    torch.testing.assert_close(picked.read, state.read[1:2])
    assert picked.steps == state.steps == 7


@pytest.mark.parametrize("kind", KINDS)
def test_the_buffer_is_written_in_place_and_grows_when_full(kind):
    inputs = random_inputs(kind, batch=2, steps=9, seed=13)
    memory = neural_memory(kind, 4)
    state = memory.initial_state(2, capacity=9, dtype=F64)
    address = state.values.data_ptr()
    for t in range(9):
        memory(state, inputs[0][:, t], inputs[1][:, t], inputs[2][:, t])
    assert state.values.data_ptr() == address and state.buffer_rows == 9 * ENDS[kind]
    # a buffer that starts with room for one step doubles as needed and gives the same numbers
    grown_reads, grown_grads = gradients(lambda: run(kind, *inputs, capacity=1)[0], inputs)
    reads, grads = gradients(lambda: run(kind, *inputs)[0], inputs)
    torch.testing.assert_close(grown_reads, reads, rtol=0, atol=0)
    for grown, grad in zip(grown_grads, grads):
        torch.testing.assert_close(grown, grad, rtol=0, atol=0)
    assert run(kind, *inputs, capacity=1)[1].buffer_rows == 16 * ENDS[kind]


@pytest.mark.parametrize("kind", KINDS)
def test_a_second_backward_pass_gives_the_same_gradients(kind):
    """The rows' gradients are accumulated outside autograd (`RowGradients`): each write takes its rows' share and
    leaves zeros, so a retained graph differentiated again starts clean."""
    inputs = random_inputs(kind, batch=2, steps=6, seed=17)
    reads, _ = run(kind, *inputs)
    weights = torch.randn(reads.shape, generator=torch.Generator().manual_seed(3), dtype=F64)
    first = torch.autograd.grad((reads * weights).sum(), inputs, retain_graph=True)
    second = torch.autograd.grad((reads * weights).sum(), inputs)
    for a, b in zip(first, second):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("kind", KINDS)
def test_selected_rows_pass_their_gradients_back_to_the_parent_state(kind):
    """Continuing from `select_rows` (a beam's parents) is differentiable: the same reads and gradients as running
    each row's history from scratch."""
    push, pop, value = random_inputs(kind, batch=3, steps=7, seed=19)
    memory = neural_memory(kind, 4)
    state = memory.initial_state(3, capacity=7, dtype=F64)
    first = [memory(state, push[:, t], pop[:, t], value[:, t]) for t in range(4)]
    index = torch.tensor([2, 0, 0])
    picked = state.select_rows(index)
    continued = [memory(picked, push[:, t], pop[:, t], value[:, t]) for t in range(4, 7)]
    reads = torch.cat([torch.stack(first, 1)[index], torch.stack(continued, 1)], dim=1)
    history = [torch.cat([x[index, :4], x[:, 4:]], dim=1) for x in (push, pop, value)]
    expected, _ = run(kind, *history)
    torch.testing.assert_close(reads, expected)
    weights = torch.randn(reads.shape, generator=torch.Generator().manual_seed(5), dtype=F64)
    grads = torch.autograd.grad((reads * weights).sum(), (push, pop, value))
    expected_grads = torch.autograd.grad((expected * weights).sum(), (push, pop, value))
    for name, grad, expected_grad in zip(("push", "pop", "value"), grads, expected_grads):
        torch.testing.assert_close(grad, expected_grad, msg=lambda m: f"d/d{name}: {m}")


def test_shapes_are_checked():
    stack, deque = NeuralStack(width=3), NeuralDeque(width=3)
    state = stack.initial_state(2)
    with pytest.raises(ValueError, match=r"push must have shape \(2, 1\)"):
        stack(state, torch.rand(3), torch.rand(2), torch.rand(2, 3))
    with pytest.raises(ValueError, match="value must have shape"):
        stack(state, torch.rand(2), torch.rand(2), torch.rand(2, 4))
    with pytest.raises(ValueError, match=r"mask must have shape \(2,\)"):
        stack(state, torch.rand(2), torch.rand(2), torch.rand(2, 3), mask=torch.ones(2, 1))
    deque_state = deque.initial_state(2)
    with pytest.raises(ValueError, match=r"pop must have shape \(2, 2\)"):
        deque(deque_state, torch.rand(2, 2), torch.rand(2), torch.rand(2, 6))
    # (B,) for a one-ended memory and a flat (B, E * m) value are accepted
    assert stack(state, torch.rand(2), torch.rand(2), torch.rand(2, 3)).shape == (2, 3)
    assert deque(deque_state, torch.rand(2, 2), torch.rand(2, 2), torch.rand(2, 6)).shape == (2, 6)
    with pytest.raises(ValueError, match="unknown memory kind"):
        neural_memory("tape", 3)


# ----- the controller interface ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_memory_interface_projects_and_steps(kind):
    torch.manual_seed(0)
    interface = MemoryInterface(hidden_size=6, memory_width=4, kind=kind, output_size=5).double()
    ends = ENDS[kind]
    assert interface.read_size == ends * 4 and interface.output_size == 5
    assert torch.all(interface.pop.bias == -1.0)
    assert interface.push.out_features == ends and interface.value.out_features == ends * 4
    controller_output = torch.randn(3, 6, dtype=F64)
    controls = interface.controls(controller_output)
    assert controls.push.shape == controls.pop.shape == (3, ends) and controls.value.shape == (3, ends, 4)
    assert torch.all((controls.push > 0) & (controls.push < 1)) and torch.all(controls.value.abs() < 1)
    # with zero weights the pop starts at sigmoid(-1)
    torch.testing.assert_close(interface.controls(torch.zeros(3, 6, dtype=F64)).pop,
                               torch.full((3, ends), torch.sigmoid(torch.tensor(-1.0, dtype=F64)).item(), dtype=F64))
    state = interface.initial_state(3, capacity=2)
    assert state.values.dtype == F64
    output, read = interface(controller_output, state)
    memory = neural_memory(kind, 4)
    expected_state = memory.initial_state(3, dtype=F64)
    expected_read = memory(expected_state, controls.push, controls.pop, controls.value)
    torch.testing.assert_close(read, expected_read)
    torch.testing.assert_close(output, controls.output)
    assert output.shape == (3, 5) and state.read is read and state.steps == 1
