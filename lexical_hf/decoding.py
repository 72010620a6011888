"""Decode many sources at once: strings in, strings out, in the sources' order.

The one batched decoding loop of the project (run_lexical's test evaluation and the scripts in benchmarks/ use it).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


@torch.no_grad()
def generate_texts(model, tokenizer, sources: Sequence[str], batch_size: int = 64, num_beams: int = 1,
                   **generate_kwargs) -> list[str]:
    """Greedy (or beam) `generate()` over `sources`, returned as target strings in the order given.

    Sources are batched by length so that little time goes to padding; the model is put in eval mode.
    `generate_kwargs` go to every `generate()` call (e.g. ``max_new_tokens=20``)."""
    if hasattr(model, "check_tokenizer"):
        model.check_tokenizer(tokenizer)  # a tokenizer with other ids would decode garbage without an error
    model.eval()
    order = sorted(range(len(sources)), key=lambda k: len(sources[k].split()))
    predictions: list[str | None] = [None] * len(sources)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        batch = tokenizer([sources[k] for k in rows], padding=True, return_tensors="pt").to(model.device)
        generated = model.generate(**batch, num_beams=num_beams, **{"do_sample": False, **generate_kwargs})
        for k, text in zip(rows, tokenizer.batch_decode(generated, skip_special_tokens=True)):
            predictions[k] = text
    return predictions
