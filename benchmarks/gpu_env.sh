# Sourced by the scripts that run on the lent GPU machine (Python 3.12, no package registry, no `datasets`): installs
# the wheels carried in .whl/ (`make gpu-wheels` here) into /tmp/site, sets the environment, and fails in seconds when
# the stack cannot import. Sets `gpu_args` (TF32 on a GPU) and starts `nvidia-smi dmon` into "$out/gpu_utilization.txt".
install_wheels() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$@" || exit 3; }
if compgen -G ".whl/*.whl" >/dev/null; then
    install_wheels .whl/*.whl
    export PYTHONPATH=/tmp/site
    # datasets 5.2 needs pyarrow >= 24; the carried wheel only replaces an older one
    if ! python3 -c "import sys, pyarrow; sys.exit(int(pyarrow.__version__.split('.')[0]) < 24)" && compgen -G ".whl/pyarrow/*.whl" >/dev/null; then
        install_wheels .whl/pyarrow/*.whl
    fi
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
# the commit that runs, written here by `make gpu-revision` (this copy's .git can be stale)
[ -s .whl/REVISION ] && export LEXICAL_HF_SOURCE_REVISION="$(cat .whl/REVISION)"
python3 -c "import torch, transformers, datasets, pyarrow, lexical_hf; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'transformers', transformers.__version__, 'datasets', datasets.__version__, 'pyarrow', pyarrow.__version__)" || exit 3
gpu_args=()
if python3 -c "import sys, torch; sys.exit(not torch.cuda.is_available())"; then
    gpu_args=(--tf32 true)
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    nvidia-smi dmon -s u -d 30 > "$out/gpu_utilization.txt" 2>&1 &
fi
