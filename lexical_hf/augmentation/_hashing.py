"""Vectorized 64-bit hashing and counter-based random numbers for GECA (numpy ``uint64`` arithmetic wraps mod 2**64).

Sequences are hashed as ``H(t) = sum_k v(t_k) * P**k  (mod 2**64)`` with a random 64-bit value ``v`` per token and an
odd base ``P``. Because ``P`` is odd it has an inverse mod 2**64, which lets the hash of a template (a sequence with
some spans replaced by one placeholder each) be computed from prefix sums of the original sequence without building
the template (see ``_fragments``). Random draws are ``splitmix64`` of a counter, so a draw depends only on
``(seed, what is drawn for)`` and not on the order in which draws are made.
"""

from __future__ import annotations

import numpy as np

U64 = np.uint64
BASE = 0x100000001B3  # odd (≡ 3 mod 8), the 64-bit FNV prime
BASE_INV = pow(BASE, -1, 2**64)
_TOKEN_SALT = 0x5EED_0F_6ECA


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finalizer, elementwise: ``uint64 (n,) -> uint64 (n,)``; a bijection with good avalanche."""
    with np.errstate(over="ignore"):
        x = np.asarray(x, dtype=U64) + U64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> U64(30))) * U64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> U64(27))) * U64(0x94D049BB133111EB)
        return x ^ (x >> U64(31))


def token_values(n: int) -> np.ndarray:
    """``uint64 (n,)``: the fixed random value ``v`` of token id ``0 .. n-1`` (independent of any seed)."""
    return splitmix64(np.arange(n, dtype=U64) ^ U64(_TOKEN_SALT))


def powers(base: int, n: int) -> np.ndarray:
    """``uint64 (n,)``: ``base**k mod 2**64`` for ``k = 0 .. n-1``."""
    out = np.empty(n, dtype=U64)
    value = 1
    for k in range(n):
        out[k] = value
        value = (value * base) % 2**64
    return out


def seed_stream(seed: int, stream: int) -> np.uint64:
    """A 64-bit key for random stream ``stream`` (0: visiting order, 1..k: the k-th draw) of ``seed``."""
    mixed = splitmix64(np.array([(seed * 0x9E3779B1 + stream * 0x85EBCA77) % 2**64], dtype=U64))
    return mixed[0]


def uniform(keys: np.ndarray, stream: np.uint64) -> np.ndarray:
    """``float64 (n,)`` in [0, 1): one uniform number per ``uint64`` key for the given stream."""
    bits = splitmix64(keys ^ stream) >> U64(11)
    return bits.astype(np.float64) * (1.0 / 2**53)


def ragged_arange(counts: np.ndarray) -> np.ndarray:
    """``[0..c0-1, 0..c1-1, ...]`` for ``counts`` (int, (n,)) -> int64 (sum(counts),)."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.cumsum(counts) - counts
    return np.arange(total, dtype=np.int64) - np.repeat(starts, counts)


def group_starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Indices where a new run of equal values starts in ``sorted_keys`` ((n,) -> int64 (groups,))."""
    if len(sorted_keys) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])


def segment_sum(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Wrapping ``uint64`` sums of consecutive segments beginning at ``starts`` (every segment non-empty)."""
    if len(starts) == 0:
        return np.zeros(0, dtype=U64)
    with np.errstate(over="ignore"):
        return np.add.reduceat(values, starts)
