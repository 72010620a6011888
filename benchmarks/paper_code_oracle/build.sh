#!/bin/bash
# Builds the bundle that runs the paper's own code (ekinakyurek/lexical, the commit its SCAN scripts ran) on SCAN
# template_around_right, as an oracle for this package's `paper` preset: its training curve and test accuracy on the
# same data and recipe. Nothing of that code enters this repository: the bundle goes to outputs/ (git-ignored).
#
#   bash benchmarks/paper_code_oracle/build.sh LEXICAL_GIT_DIR SCAN_GIT_DIR DATA_DIR [OUT=outputs/oracle_lexical]
#
# LEXICAL_GIT_DIR: a git directory of github.com/ekinakyurek/lexical (commit 3956fa2 checked);
# SCAN_GIT_DIR: one of github.com/ekinakyurek/SCAN, the submodule commit that repository pins (it holds the
# alignment file of the Simple lexicon, which the lexical snapshot lacks); DATA_DIR: the benchmark mirror (the SCAN
# template_around_right train and test files, checked against data/SOURCES.md by the loaders).
# The bundle: code/ (the snapshot, unmodified, with the SCAN files laid out where its main.py reads them),
# wheels/ (its pure-Python imports for Python 3.12, which the GPU image lacks), shim/ (stand-ins for seaborn and
# matplotlib, which its main.py imports only to set a plot style) and run.sh (see there). About 25 MiB: carry it.
set -euo pipefail
lexical=${1:?LEXICAL_GIT_DIR}; scan=${2:?SCAN_GIT_DIR}; data=${3:?DATA_DIR}; out=${4:-outputs/oracle_lexical}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$out"; mkdir -p "$out/code" "$out/wheels" "$out/shim/matplotlib"
git --git-dir="$lexical" archive HEAD | tar -x -C "$out/code"
pinned=$(git --git-dir="$lexical" ls-tree HEAD SCAN | awk '{print $3}')
mkdir -p "$out/code/SCAN/template_split/alignments"
git --git-dir="$scan" show "$pinned:template_split/alignments/simple.align.v3.json" \
    > "$out/code/SCAN/template_split/alignments/simple.align.v3.json"
git --git-dir="$scan" show "$pinned:LICENSE" > "$out/code/SCAN/LICENSE" 2>/dev/null || true
for split in train test; do
    found=$(find "$data" -name "tasks_${split}_template_around_right.txt" | head -n 1)
    [ -n "$found" ] || { echo "no tasks_${split}_template_around_right.txt under $data" >&2; exit 2; }
    cp "$found" "$out/code/SCAN/template_split/"
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
    -d "$out/wheels" absl-py==2.5.1 tqdm==4.70.1 nltk==3.10.4 regex==2026.11.19 click==8.5.1 joblib==1.6.0 \
    tensorboard==2.21.0 protobuf==7.36.2
printf 'def set(*args, **kwargs):\n    return None\n\n\nset_theme = set\n' > "$out/shim/seaborn.py"
printf 'rcParams = {}\n' > "$out/shim/matplotlib/__init__.py"
printf 'from . import rcParams\n' > "$out/shim/matplotlib/pyplot.py"
cp "$here/run.sh" "$out/run.sh"
du -sh "$out"
