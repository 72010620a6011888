"""Lexicon learning: high-precision token-level translation rules learned from parallel data.

    from lexical_hf.lexicon import learn_lexicon, Lexicon
    lexicon = learn_lexicon(dataset["train"], method="simple")  # or pmi, ibm2, bayesian, identity, uniform
    L = lexicon.to_matrix(tokenizer)                                 # (|V_x|, |V_y|), rows are distributions
    lexicon.save_pretrained("out/")                                  # out/lexicon.json
    Lexicon.from_pretrained("out/")

See `learners` for the rules each learner implements and `lexicon` for how entries become the matrix L.
"""

from .corpus import ParallelCorpus, TokenSequences
from .lexicon import FALLBACKS, LEXICON_FILE, SPECIAL_TOKENS, Lexicon, LexiconCoverageWarning, plot_lexicons
from .learners import (
    LEARNERS,
    available_methods,
    bayesian_learner,
    ibm2_learner,
    identity_learner,
    learn_lexicon,
    pmi_learner,
    register_learner,
    simple_learner,
    uniform_learner,
)
from .preprocessing import apply_lexicon
from .registry import LearnerOutput, LearnerSpec

__all__ = [
    "FALLBACKS",
    "LEARNERS",
    "LEXICON_FILE",
    "LearnerOutput",
    "LearnerSpec",
    "Lexicon",
    "LexiconCoverageWarning",
    "ParallelCorpus",
    "SPECIAL_TOKENS",
    "TokenSequences",
    "apply_lexicon",
    "available_methods",
    "bayesian_learner",
    "ibm2_learner",
    "identity_learner",
    "learn_lexicon",
    "plot_lexicons",
    "pmi_learner",
    "register_learner",
    "simple_learner",
    "uniform_learner",
]
