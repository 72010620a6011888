"""Packaging for lexical_hf.

Install torch first (``pip install torch==2.13.0`` on the project's CPU machines) so that pip never resolves the
multi-GB CUDA wheels; the range below is satisfied by any recent torch already present.
"""

import re
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
VERSION = re.search(r'__version__ = "([^"]+)"', (HERE / "lexical_hf" / "__init__.py").read_text()).group(1)

setup(
    name="lexical_hf",
    version=VERSION,
    description="The lexical translation mechanism (Akyürek & Andreas, ACL 2021) for Hugging Face transformers",
    long_description=(HERE / "README.md").read_text(encoding="utf-8") if (HERE / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    license="MIT",
    license_files=["LICENSE", "THIRD_PARTY_NOTICES.md"],
    python_requires=">=3.11",
    # The card templates live in the top-level model_cards/ folder and ship inside the package as
    # lexical_hf.model_cards (package data, read with importlib.resources): nothing but lexical_hf is installed.
    packages=find_packages(include=["lexical_hf", "lexical_hf.*"]) + ["lexical_hf.model_cards"],
    package_dir={"lexical_hf.model_cards": "model_cards"},
    package_data={"lexical_hf": ["*.json", "**/*.json", "**/*.md"], "lexical_hf.model_cards": ["*.md"]},
    include_package_data=True,
    install_requires=[
        "torch>=2.6",  # transformers 5.24 disables PyTorch below 2.6 (5.17 below 2.5)
        "transformers>=5.17,<6",  # 5.17 (the GPU image) is the oldest release the suite runs on
        "tokenizers>=0.20",
        "datasets>=4",
        "pyarrow>=15",  # imported directly (benchmarks.py reads Arrow errors); datasets needs it anyway
        "accelerate>=1.1",  # what Trainer asks for (ACCELERATE_MIN_VERSION)
        "huggingface_hub>=1.0",
        "safetensors>=0.4",
        "numpy>=1.26",
        "sacrebleu>=2.4",
        "pyyaml>=5.1",  # dataset_scripts/publish.py writes the dataset card's YAML header
    ],
    extras_require={
        "plot": ["matplotlib>=3.7"],
        "mt": ["jieba>=0.42", "sacremoses>=0.1"],
        "test": ["pytest>=8", "pytest-timeout>=2", "pytest-xdist>=3", "hypothesis>=6", "pyyaml>=6", "matplotlib>=3.7", "jieba>=0.42",
                 "sacremoses>=0.1"],
    },
    entry_points={"console_scripts": ["lexical-hf=lexical_hf.cli:main"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
