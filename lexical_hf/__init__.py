"""lexical_hf: the lexical translation mechanism of Akyürek & Andreas (ACL 2021) for Hugging Face transformers.

Importing the package registers the model with `AutoConfig`, `AutoModelForSeq2SeqLM` and `AutoTokenizer`, so a saved
folder loads through the Auto classes without remote code.
"""

__version__ = "0.1.0"

from transformers import AutoConfig, AutoModelForSeq2SeqLM, AutoTokenizer

from .augmentation import augment, mix_augmented
from .data import list_benchmarks, load_benchmark
from .configuration_lexical import LexicalSeq2SeqConfig
from .head import LexicalHeadOutput, LexicalTranslationHead
from .lexicon import Lexicon, apply_lexicon, learn_lexicon
from .modeling_lexical import LexicalSeq2SeqForConditionalGeneration, LexicalSeq2SeqLMOutput
from .tokenization_lexical import LexicalTokenizer

AutoConfig.register(LexicalSeq2SeqConfig.model_type, LexicalSeq2SeqConfig, exist_ok=True)
AutoModelForSeq2SeqLM.register(LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration, exist_ok=True)
AutoTokenizer.register(LexicalSeq2SeqConfig, tokenizer_class=LexicalTokenizer, exist_ok=True)

__all__ = [
    "Lexicon",
    "LexicalHeadOutput",
    "LexicalSeq2SeqConfig",
    "LexicalSeq2SeqForConditionalGeneration",
    "LexicalSeq2SeqLMOutput",
    "LexicalTokenizer",
    "LexicalTranslationHead",
    "__version__",
    "apply_lexicon",
    "augment",
    "learn_lexicon",
    "list_benchmarks",
    "load_benchmark",
    "mix_augmented",
]
