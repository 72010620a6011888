"""The lexical translation head: one output layer that mixes a write softmax with a lexicon lookup."""

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

LEXICON_ROW_TOLERANCE = 1e-4


@dataclass
class LexicalHeadOutput:
    """What the head returns.

    Attributes:
        log_probs: (batch, target_len, |V_y|) log p(y_i = w), the mixture; -inf on non-generatable ids.
        gate: (batch, target_len) p_gate, the weight of p_write (1 everywhere in `lexical_mode="none"`).
        lexical_log_probs: (batch, target_len, |V_y|) log p_lex(w), floored at log(tiny) instead of -inf.
    """

    log_probs: torch.Tensor
    gate: torch.Tensor
    lexical_log_probs: torch.Tensor | None = None


class LexicalTranslationHead(nn.Module):
    r"""Mixture of a write distribution and a lexical translation distribution (Akyürek & Andreas, 2021, Eq. 6–10).

    At each decoder step i, with output features o_i (from [c_i; h_i]), gate features h_i, attention α_i over the n
    source positions and source tokens x_1..x_n::

        p_write(w) = softmax(W_write o_i)_w
        p_lex(w)   = Σ_j α_i^j · L[x_j, w]                      (L: |V_x|×|V_y|, rows sum to 1)
        p(y_i=w)   = p_gate · p_write(w) + (1 − p_gate) · p_lex(w)

    computed in log space: ``log p = logaddexp(log p_gate + log p_write, log(1 − p_gate) + log p_lex)``.

    Gate styles:
      * ``"sigmoid"`` (the paper): p_gate = σ(w_gateᵀ h_i).
      * ``"copy_token"`` (the paper's public code): W_write has one extra row, a reserved class; with
        s = softmax(W_write o_i) over |V_y|+1 classes, p(w) = s_w + s_copy · p_lex(w). This is the same mixture with
        p_gate = 1 − s_copy and p_write(w) = s_w / (1 − s_copy).

    Probability floor (``probability_floor`` = ε > 0, the paper's public code uses 1e-7; 0 turns it off): with a
    lexicon, every generatable token gets p(w) = (p(w) + ε) / (1 + G·ε), G the number of generatable ids. It bounds a
    token's loss by −log ε and leaves a token the model gives far less than ε almost no gradient.

    Normalisation (``mixture_normalization``): ``"paper"`` takes p_write over the generatable ids, as the equations
    above. ``"code"`` is the paper's public code: the write softmax runs over every class, the mixture is formed, and
    then renormalised over the generatable ids other than ``<unk>`` (``unknown_id``), so the write mass on the
    non-generatable ids and ``<unk>``, and the lexical mass of abstaining source tokens (rows sent to ``<unk>``), are
    dropped and the rest rescaled; without a lexicon it is a softmax that excludes ``<unk>``.

    Lexical modes: ``"none"`` fixes p_gate = 1 (plain attentional seq2seq); ``"copy"`` and ``"lexical"`` use L (copy is
    the identity lexicon over shared token strings, See et al. 2017).

    L is stored as the buffer ``lexicon`` (frozen; saved and loaded exactly) or, with ``train_lexicon=True``, as the
    parameter ``lexicon_logits`` with L = softmax(lexicon_logits) row-wise (zeros become logits of log(1e-8)).
    Columns of non-generatable ids (padding, decoder start) get no mass from either distribution.

    Shapes (B = batch, T = target length, S = source length, F = feature size, G = gate feature size):
        features:        (B, T, F)
        gate_features:   (B, T, G)
        attention:       (B, T, S), rows sum to 1 over unmasked source positions, 0 on padding
        source_ids:      (B, S)
        returns:         LexicalHeadOutput with log_probs (B, T, |V_y|) and gate (B, T)

    The head knows nothing about the backbone: any model that provides these tensors can use it.
    """

    def __init__(
        self,
        feature_size: int,
        gate_feature_size: int,
        source_vocab_size: int,
        target_vocab_size: int,
        non_generatable_ids: list[int],
        lexical_mode: str = "lexical",
        gate: str = "sigmoid",
        train_lexicon: bool = False,
        output_dropout: float = 0.0,
        probability_floor: float = 0.0,
        mixture_normalization: str = "paper",
        unknown_id: int | None = None,
    ):
        super().__init__()
        self.lexical_mode = lexical_mode
        self.gate_style = gate
        self.source_vocab_size = source_vocab_size
        self.target_vocab_size = target_vocab_size
        self.non_generatable_ids = list(non_generatable_ids)
        self._non_generatable_indices: dict[torch.device, torch.Tensor] = {}  # see _non_generatable_index
        if mixture_normalization == "code" and unknown_id is None:
            raise ValueError("mixture_normalization='code' renormalises without <unk>: give unknown_id")
        self.mixture_normalization = mixture_normalization
        # the ids that get no probability in the output: the non-generatable ones, and <unk> under the code's rule
        unknown = [unknown_id] if mixture_normalization == "code" else []
        self.excluded_ids = sorted({*self.non_generatable_ids, *unknown})
        self._excluded_indices: dict[torch.device, torch.Tensor] = {}
        self.uses_lexicon = lexical_mode != "none"
        self.output_dropout = nn.Dropout(output_dropout)
        self.probability_floor = probability_floor

        extra_class = int(self.uses_lexicon and gate == "copy_token")
        self.write_projection = nn.Linear(feature_size, target_vocab_size + extra_class)
        self.gate_projection = nn.Linear(gate_feature_size, 1) if self.uses_lexicon and gate == "sigmoid" else None

        self.train_lexicon = train_lexicon
        if self.uses_lexicon:
            initial = self.uniform_lexicon()
            if train_lexicon:
                self.lexicon_logits = nn.Parameter(self._probabilities_to_logits(initial))
            else:
                self.register_buffer("lexicon", initial, persistent=True)

    # ------------------------------------------------------------------ the lexicon matrix
    def uniform_lexicon(self) -> torch.Tensor:
        """Every source token spread evenly over the generatable target tokens (the placeholder before a lexicon is set)."""
        # float32 whatever the default dtype (from_pretrained(dtype=torch.bfloat16) builds the model under it): see _apply
        matrix = torch.ones(self.source_vocab_size, self.target_vocab_size, dtype=torch.float32)
        matrix[:, self.non_generatable_ids] = 0.0
        return matrix / matrix.sum(-1, keepdim=True)

    @staticmethod
    def _probabilities_to_logits(matrix: torch.Tensor) -> torch.Tensor:
        return matrix.clamp_min(1e-8).log()

    def lexicon_matrix(self) -> torch.Tensor:
        """L as probabilities, (|V_x|, |V_y|)."""
        if not self.uses_lexicon:
            raise ValueError("this head has lexical_mode='none': it has no lexicon")
        if self.train_lexicon:
            return self._lexicon_rows(torch.arange(self.source_vocab_size, device=self.lexicon_logits.device))
        return self.lexicon

    def set_lexicon(self, matrix: torch.Tensor) -> None:
        """Store L after checking it is a lexicon for these vocabularies. Raises `ValueError` otherwise."""
        if not self.uses_lexicon:
            raise ValueError("lexical_mode='none' has no lexicon to set; use lexical_mode='lexical' or 'copy'")
        matrix = torch.as_tensor(matrix, dtype=torch.float32)
        expected = (self.source_vocab_size, self.target_vocab_size)
        if tuple(matrix.shape) != expected:
            raise ValueError(
                f"lexicon matrix has shape {tuple(matrix.shape)} but the model's vocabularies need "
                f"(source_vocab_size, target_vocab_size) = {expected}: was it built for another tokenizer?"
            )
        if not torch.isfinite(matrix).all() or (matrix < 0).any():
            raise ValueError("lexicon matrix must be finite and non-negative")
        row_sums = matrix.sum(-1)
        bad_rows = (row_sums - 1).abs() > LEXICON_ROW_TOLERANCE
        if bad_rows.any():
            first = bad_rows.nonzero()[0].item()
            raise ValueError(
                f"lexicon rows must sum to 1; {int(bad_rows.sum())} do not (row {first} sums to {row_sums[first]:.4f})"
            )
        leaked = matrix[:, self.non_generatable_ids].sum()
        if leaked > LEXICON_ROW_TOLERANCE:
            raise ValueError(
                f"lexicon puts mass {leaked:.4f} on non-generatable target ids {self.non_generatable_ids} (padding / "
                "decoder start); these columns must be zero"
            )
        with torch.no_grad():
            if self.train_lexicon:
                self.lexicon_logits.copy_(self._probabilities_to_logits(matrix).to(self.lexicon_logits.device))
            else:
                self.lexicon.copy_(matrix.to(self.lexicon.device))

    def _lexicon_rows(self, token_ids: torch.Tensor) -> torch.Tensor:
        """L[token_ids] as probabilities; for a trainable lexicon only the needed rows are normalised."""
        if not self.train_lexicon:
            return self.lexicon[token_ids]
        logits = self.lexicon_logits[token_ids]
        logits = logits.index_fill(-1, self._non_generatable_index(logits.device), float("-inf"))
        return logits.softmax(-1)

    def _non_generatable_index(self, device) -> torch.Tensor:
        """The ids the head never generates, as a tensor on `device`."""
        return self._cached_index(self._non_generatable_indices, self.non_generatable_ids, device)

    @staticmethod
    def _cached_index(cache: dict, ids: list[int], device) -> torch.Tensor:
        """`ids` as a tensor on `device`, made once per device: a forward takes no data from the host, which a CUDA
        graph capture forbids (and which costs a copy every step otherwise)."""
        if torch.compiler.is_compiling():  # a constant of the traced graph
            return torch.tensor(ids, device=device, dtype=torch.long)
        index = cache.get(device)
        if index is None:
            index = cache[device] = torch.tensor(ids, device=device, dtype=torch.long)
        return index

    def _apply(self, fn, recurse=True):
        """`model.to(torch.bfloat16)` / `.half()` cast every floating buffer; the frozen lexicon is kept at float32 or
        wider: rounding it to 8 mantissa bits would change a learned lexicon (rows no longer sum to 1, and a save
        writes the rounded values) and buys nothing, since the mixture is computed in float32 anyway. Device moves
        and casts to float64 apply as usual."""
        lexicon = self._buffers.get("lexicon")
        super()._apply(fn, recurse)
        moved = self._buffers.get("lexicon")
        if lexicon is not None and moved is not None and moved.dtype in (torch.float16, torch.bfloat16):
            self._buffers["lexicon"] = lexicon.to(device=moved.device, dtype=torch.float32)
        return self

    # ------------------------------------------------------------------ the mixture
    def forward(
        self,
        features: torch.Tensor,
        gate_features: torch.Tensor,
        attention: torch.Tensor,
        source_ids: torch.Tensor,
    ) -> LexicalHeadOutput:
        excluded = self._cached_index(self._excluded_indices, self.excluded_ids, features.device)
        code = self.mixture_normalization == "code"
        write_logits = self.write_projection(self.output_dropout(features))
        if not (code and self.uses_lexicon):  # the code's mixture takes the softmax over every class, then renormalises
            write_logits = write_logits.index_fill(-1, excluded, float("-inf"))
        # the mixture in float32, or float64 for a float64 model (never below float32: log-space sums of bf16 lose it)
        compute_dtype = torch.promote_types(write_logits.dtype, torch.float32)
        log_write = F.log_softmax(write_logits.to(compute_dtype), dim=-1)

        if not self.uses_lexicon:
            gate = torch.ones(log_write.shape[:-1], device=log_write.device, dtype=log_write.dtype)
            return LexicalHeadOutput(log_probs=log_write, gate=gate)

        # p_lex = α · L[x]: (B,T,S) @ (B,S,V) -> (B,T,V); a batched matmul, no (B,T,S,V) tensor.
        lexical_probs = torch.bmm(attention.to(compute_dtype), self._lexicon_rows(source_ids).to(compute_dtype))
        # Where L puts no mass, floor log p_lex at log(tiny) rather than -inf: the mixture stays finite (no NaN
        # gradients through logaddexp) and the floor adds at most |V|·1e-38 probability.
        log_lexical = lexical_probs.clamp_min(torch.finfo(lexical_probs.dtype).tiny).log()

        if self.gate_style == "sigmoid":
            gate_logit = self.gate_projection(gate_features).squeeze(-1).to(compute_dtype)
            log_gate, log_one_minus_gate = F.logsigmoid(gate_logit), F.logsigmoid(-gate_logit)
            log_probs = torch.logaddexp(
                log_gate.unsqueeze(-1) + log_write, log_one_minus_gate.unsqueeze(-1) + log_lexical
            )
        else:  # copy_token: the last class of the write softmax is the reserved copy class
            log_copy = log_write[..., -1]
            log_probs = torch.logaddexp(log_write[..., :-1], log_copy.unsqueeze(-1) + log_lexical)
            log_gate = torch.log1p(-log_copy.exp().clamp(max=1 - 1e-7))
        if self.probability_floor > 0:  # p + ε, normalised below (code) or by 1 + G·ε over the G ids kept (paper)
            log_probs = torch.logaddexp(log_probs, log_probs.new_full((), math.log(self.probability_floor)))
            if not code:
                log_probs = log_probs - math.log1p((log_probs.shape[-1] - excluded.numel()) * self.probability_floor)
        log_probs = log_probs.index_fill(-1, excluded, float("-inf"))
        if code:
            log_probs = log_probs - log_probs.logsumexp(-1, keepdim=True)
        return LexicalHeadOutput(log_probs=log_probs, gate=log_gate.exp(), lexical_log_probs=log_lexical)
