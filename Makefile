# Every target installs what it needs first, so each works on a fresh machine.
# torch comes first and pinned, so that pip never resolves the multi-GB CUDA builds: on the project's machines pip finds
# the local CPU wheel; elsewhere pass TORCH_INDEX=https://download.pytorch.org/whl/cpu (PyPI's own torch is the CUDA
# build). Where a torch is already installed (e.g. a GPU image) it is kept.
PYTHON ?= python3
TORCH_VERSION ?= 2.13.0
TORCH_INDEX ?=

.PHONY: install test demo reproduce gpu-wheels gpu-revision test-gpu-image-stack

install:
	$(PYTHON) -c "import torch" 2>/dev/null || $(PYTHON) -m pip install -q torch==$(TORCH_VERSION) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PYTHON) -m pip install -q -e ".[test]"

# Two test processes (pytest-xdist), one torch thread each (tests/conftest.py): the suite is mostly single-threaded
# training runs and interpreter start-ups, so on 2 cores it takes about half the time of one process.
TEST_WORKERS ?= 2
test: install
	$(PYTHON) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) tests

# The paper's Colors model (LSTM + Simple lexicon), 4 seeds, two at a time (one CPU thread each).
demo: install
	HF_HUB_OFFLINE=1 $(PYTHON) examples/run_lexical.py --benchmark colors --lexicon simple --seeds 0-3 \
		--parallel_seeds 2 --output_dir outputs/colors-simple-demo --disable_tqdm true

# One row of the paper's tables, e.g. `make reproduce TASK=scan-jump ROW=simple` (TIER=paper on a GPU; SEEDS=0-9;
# EXTEND=1 adds the seeds run now to the existing row file instead of replacing it; RERUN="why" runs SEEDS of the
# row again, keeping their replaced entries in the row file).
# Writes results/<task>/<row>.json (eng-cmn: results/mt/), outputs/reproduce/lexical-<task>-<row>/ and rebuilds results/README.md.
# PUBLISH=1 only rebuilds the row's Hub-ready folder (its first seed, the row file's settings) and checks its metrics.
TIER ?= cpu
reproduce: install
	HF_HUB_OFFLINE=1 $(PYTHON) benchmarks/reproduce.py --task $(TASK) --row $(ROW) --tier $(TIER) $(if $(SEEDS),--seeds $(SEEDS)) $(if $(EXTEND),--extend) $(if $(RERUN),--rerun "$(RERUN)") $(if $(PUBLISH),--publish)

# Wheels for the lent GPU machine (Python 3.12, no package registry), which lacks datasets and two of its needs;
# fsspec is pinned within datasets' range, and pyarrow (datasets 5.2 needs >= 24; the image had 25.0.1 on 2026-11-26)
# waits in .whl/pyarrow/, installed only over an older one. benchmarks/gpu_tier.sh installs them there from .whl/
# (git-ignored; carry it with the device tool: about 57 MB of the 64 MiB a call may carry, with the checkout).
GPU_WHEELS ?= datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 fsspec==2026.9.0
GPU_PYARROW ?= pyarrow==26.0.1
# The test suite on the GPU image's stack (transformers 5.17, huggingface_hub 1.x) in a throwaway virtual environment
# over this one's packages: run it after touching transformers or Hub APIs, since CI tests only the newest releases.
test-gpu-image-stack: install
	$(PYTHON) -m venv --system-site-packages /tmp/lexical_hf-gpu-image-stack
	/tmp/lexical_hf-gpu-image-stack/bin/pip install -q --no-deps transformers==5.17.0
	/tmp/lexical_hf-gpu-image-stack/bin/pip install -q "huggingface_hub>=1.5,<2" httpx
	/tmp/lexical_hf-gpu-image-stack/bin/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) tests

GPU_WHEEL_DOWNLOAD = $(PYTHON) -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
	--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
gpu-wheels:
	$(GPU_WHEEL_DOWNLOAD) -d .whl $(GPU_WHEELS)
	$(GPU_WHEEL_DOWNLOAD) -d .whl/pyarrow $(GPU_PYARROW)
	$(MAKE) -s gpu-revision

# The commit the device runs, for its records (the device's copy of .git can be stale): run before every device call.
gpu-revision:
	$(PYTHON) -c "from pathlib import Path; from lexical_hf.training.provenance import source_revision; print(source_revision(Path('.')))" > .whl/REVISION
