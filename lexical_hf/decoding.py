"""Decode many sources at once: strings in, strings out, in the sources' order.

The one batched decoding loop of the project (run_lexical's test evaluation and the scripts in benchmarks/ use it).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


@torch.no_grad()
def generate_texts(model, tokenizer, sources: Sequence[str], batch_size: int = 64, num_beams: int = 1,
                   **generate_kwargs) -> list[str] | list[list[str]]:
    """Greedy (or beam) `generate()` over `sources`, returned as target strings in the order given.

    Sources are batched by length so that little time goes to padding; the model is put in eval mode.
    `generate_kwargs` go to every `generate()` call (e.g. ``max_new_tokens=20``). With ``num_return_sequences=k``
    (k > 1) each source gets a list of its k outputs, best first."""
    if isinstance(sources, str):  # a string is a sequence too: each character would be decoded as a source
        raise TypeError("sources must be a list of strings, not one string: pass [source]")
    for index, source in enumerate(sources):
        if not isinstance(source, str):
            raise TypeError(f"sources[{index}] is {type(source).__name__} {source!r:.60}, not a string: generate_texts "
                            "takes a list of source strings (space-separated words)")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    per_source = generate_kwargs.get("num_return_sequences") or 1
    if hasattr(model, "check_tokenizer"):
        model.check_tokenizer(tokenizer)  # a tokenizer with other ids would decode garbage without an error
    model.eval()
    order = sorted(range(len(sources)), key=lambda k: len(sources[k].split()))
    predictions: list = [None] * len(sources)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        batch = tokenizer([sources[k] for k in rows], padding=True, return_tensors="pt").to(model.device)
        generated = model.generate(**batch, num_beams=num_beams, **{"do_sample": False, **generate_kwargs})
        texts = tokenizer.batch_decode(generated, skip_special_tokens=True)  # k consecutive rows per source
        for position, k in enumerate(rows):
            outputs = texts[position * per_source : (position + 1) * per_source]
            predictions[k] = outputs if per_source > 1 else outputs[0]
    return predictions
