"""`python -m lexical_hf.training ...`: the same as `lexical-hf train ...` (the seed workers of --parallel_seeds)."""

from .pipeline import main

if __name__ == "__main__":
    main(program="python -m lexical_hf.training")
