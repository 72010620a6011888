"""Training with `Seq2SeqTrainer`: the pipeline behind `lexical-hf train` and `examples/run_lexical.py`.

* `pipeline.py`: `main(argv)`, the pipeline top to bottom (data → tokenizer → lexicon → seeds → Hub-ready folder).
* `arguments.py`: the flags (four dataclasses beside `Seq2SeqTrainingArguments`) and the presets
  (`presets/<backbone>.json`).
* `seeds.py`: one `Seq2SeqTrainer` run per seed, resume, seeds side by side in subprocesses.
* `trainer.py`: the `Seq2SeqTrainer` subclass, its resumable length-grouped sampler, the wall-clock limit and the
  validation metric.
* `publish.py`, `provenance.py`: the output folder (card, results, push) and where a result comes from.
"""

from .arguments import DataArguments, ExperimentArguments, LexiconArguments, ModelArguments, parse_arguments
from .pipeline import build_lexicon, build_model, load_data, main, tokenize_pairs
from .trainer import EpochSeededLengthGroupedSampler, LexicalSeq2SeqTrainer, WallClockLimit

__all__ = [
    "DataArguments",
    "EpochSeededLengthGroupedSampler",
    "ExperimentArguments",
    "LexicalSeq2SeqTrainer",
    "LexiconArguments",
    "ModelArguments",
    "WallClockLimit",
    "build_lexicon",
    "build_model",
    "load_data",
    "main",
    "parse_arguments",
    "tokenize_pairs",
]
