"""Does our paper-recipe LSTM compute the same function as the authors' code (Akyürek & Andreas 2021), given the same
weights?  A CPU check on SCAN template_around_right.

What it does:

1. Builds the authors' model (their `mutex.Mutex` / `EncDec`, constructed the way their `main.py` does for
   ``exp/SCAN/simple.sh``: ``--copy --highdrop``, unidirectional 2-layer LSTM, the Simple aligner file) and ours
   (`build_model` with the ``paper/scan`` preset, Simple lexicon with fallback ``mutual_exclusivity_or_abstain``,
   ``source_bos``), both small (``--dim``). Their vocabularies come from their data files in order of appearance,
   ours from `LexicalTokenizer`; the script maps ids by token string and compares the two lexicons row by row.
2. Copies our weights into theirs, permuting embedding and output rows by the id maps and the columns of the
   "combine" layer W_o by the order of its input blocks; every parameter of both models must be mapped or listed
   as unused (their ``<copy>`` embedding rows, ``seq_picker`` and the second model ``qxy``), else it stops.
3. On one batch of training pairs (none with a 48-token target, see below): (a) eval-mode per-token
   log-probabilities and per-sequence NLL, (b) gradients of the summed NLL, (c) train-mode batch loss (summed NLL /
   batch size, the code's forward) over N dropout draws, also for our ``feed_dropout=False`` variant, (c') the same
   forward with dropout replaced by a deterministic rate tag, F.dropout(x, p) = x·(1 + p) (dropout between LSTM
   layers, inside the code's fused kernel, set to 0 on both sides), which matches only if the same rates sit at the
   same places, (d) greedy decoding of test sentences. Besides our model as it is ("ours"), it scores "ours + code
   head": our backbone's features o_i and attention α_i pushed through the code's output arithmetic (softmax over
   all classes, + ε, log, <pad>/<s>/<unk>/<copy> masked, renormalised by the loss's log-softmax), so that a
   difference in the head and one in the backbone are told apart. The code's forced </s> at its last step is
   checked on the longest training targets. The weights are ours after ``--pretrain-steps`` ("early") and
   ``--later-steps`` more ("later") Adam updates of our model: at random initialisation the outputs are near uniform
   and dropout changes little, and the two stages show how the differences change with training.
4. Writes results/diagnostics/paper_code_equivalence.json and .md, and prints the summary.

The authors' code is not part of this file: it is imported from ``--paper-code`` (default: the unmodified snapshot
in outputs/oracle_lexical/code), copied to a temporary folder where the two patches that modern torch needs are
applied (``pack_padded_sequence`` lengths on the CPU; ``np.isfinite(gnorm.item())``). Missing absl / nltk /
tensorboard are installed from ``--wheels`` into a temporary folder (``pip --no-index --no-deps --target``).

Run (from the repository root; about 2 minutes on one thread):

    python benchmarks/paper_code_equivalence.py --paper-code outputs/oracle_lexical/code
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import math
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

import lexical_hf
from lexical_hf.training.arguments import LexiconArguments, ModelArguments, preset_defaults
from lexical_hf.training.pipeline import build_model

ROOT = Path(__file__).resolve().parents[1]
ORACLE = ROOT / "outputs" / "oracle_lexical"
EPS = 1e-7  # the code's probability floor in its copy path
CODE_PATCHES = (  # (file, old text, new text): what modern torch needs, numerically nothing
    ("src/encoder.py", "pack_padded_sequence(padded_sequence, lens)", "pack_padded_sequence(padded_sequence, lens.cpu())"),
    ("main.py", "if not np.isfinite(gnorm):", "if not np.isfinite(gnorm.item()):"),
)
CODE_FILES = ("src/encoder.py", "src/decoder.py", "src/attention.py", "src/encdec.py", "mutex.py", "main.py", "data.py",
              "src/vocab.py", "SCAN/template_split/alignments/simple.align.v3.json")
UNUSED_CODE_PARAMETERS = ("pyx.decoder.seq_picker.",  # only read with more than one attention
                          "qxy.")  # the reverse model q(x|y): built by main.py, never called by Mutex.forward


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paper-code", default=str(ORACLE / "code"), help="folder of the authors' code (unmodified)")
    parser.add_argument("--shim", default=str(ORACLE / "shim"), help="stand-ins for seaborn / matplotlib")
    parser.add_argument("--wheels", default=str(ORACLE / "wheels"), help="wheels of absl, nltk, tensorboard, protobuf")
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"), help="the benchmark mirror")
    parser.add_argument("--dim", type=int, default=64, help="embedding = hidden size of both models")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--draws", type=int, default=300, help="dropout draws per model in (c)")
    parser.add_argument("--pretrain-steps", type=int, default=150, help="our updates before the 'early' checks")
    parser.add_argument("--later-steps", type=int, default=450, help="further updates before the 'later' checks")
    parser.add_argument("--decode", type=int, default=20, help="test sentences decoded in (d)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ours", default="", metavar="NAME=VALUE,…",
                        help="model settings of ours over the preset's, e.g. mixture_normalization=paper,probability_floor=0 (the paper's equations)")
    parser.add_argument("--out", default=str(ROOT / "results" / "diagnostics" / "paper_code_equivalence.json"))
    return parser.parse_args(argv)


# ---------------------------------------------------------------------------------------------------- the code
def prepare_code(source: str, shim: str, wheels: str, workdir: Path) -> Path:
    """A patched copy of the authors' code in `workdir`, importable (shim, dependencies and the copy on sys.path)."""
    code = workdir / "code"
    shutil.copytree(source, code)
    for name, old, new in CODE_PATCHES:
        path = code / name
        text = path.read_text()
        if text.count(old) != 1:
            raise RuntimeError(f"patch for {name} does not apply (expected one {old!r})")
        path.write_text(text.replace(old, new))
    missing = [m for m in ("absl", "nltk", "tensorboard") if importlib.util.find_spec(m) is None]
    paths = [shim]
    if missing:
        site = workdir / "site"
        wanted = [str(w) for w in sorted(Path(wheels).glob("*.whl"))
                  if w.name.split("-")[0].lower() in ("absl_py", "nltk", "tensorboard", "protobuf")]
        subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "-q", "--disable-pip-version-check",
                        "--target", str(site), *wanted], check=True, capture_output=True)
        paths.append(str(site))
    sys.path[:0] = [*paths, str(code)]
    return code


def import_code(code: Path, dim: int, layers: int):
    """Import their main.py (which defines the absl flags) and parse the recipe's flags."""
    for name in ("main", "mutex", "data", "src", "hlog"):
        if name in sys.modules:
            raise RuntimeError(f"a module named {name!r} is already imported; it would shadow the authors' one")
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):  # hlog prints its handlers at import
        main = importlib.import_module("main")
    mutex, data = importlib.import_module("mutex"), importlib.import_module("data")
    aligner = code / "SCAN" / "template_split" / "alignments" / "simple.align.v3.json"
    main.FLAGS(["paper_code_equivalence", "--seed", "0", "--n_layers", str(layers), "--dim", str(dim), "--dropout", "0.4",
                "--temp", "1.0", "--copy", "--highdrop", "--scan_split", "around_right", "--aligner", str(aligner), "--SCAN"])
    return main, mutex, data


def code_vocabularies(main, code: Path):
    """Their Vocab objects, built as their SCAN loader does: train then test file, each line's input words then its
    output words, in order of appearance; and the maximal lengths + 1 (their MAXLEN_X / MAXLEN_Y)."""
    vocab_x, vocab_y = main.Vocab(), main.Vocab()
    max_x = max_y = 0
    for split in ("train", "test"):
        path = code / "SCAN" / "template_split" / f"tasks_{split}_template_around_right.txt"
        for line in path.read_text().splitlines():
            source, target = line[len("IN: "):].split(" OUT: ")
            source, target = source.split(" "), target.split(" ")
            max_x, max_y = max(max_x, len(source)), max(max_y, len(target))
            for word in source:
                vocab_x.add(word)
            for word in target:
                vocab_y.add(word)
    return vocab_x, vocab_y, max_x + 1, max_y + 1


def build_code_model(main, mutex, vocab_x, vocab_y, max_x: int, max_y: int, seed: int):
    """Their model as main.py builds it for the SCAN recipe, with their lexicon (copy_translation_scan)."""
    flags = main.FLAGS
    torch.manual_seed(seed)
    model = mutex.Mutex(vocab_x, vocab_y, flags.dim, flags.dim, max_len_x=max_x, max_len_y=max_y, copy=flags.copy,
                        n_layers=flags.n_layers, self_att=False, attention=flags.attention, dropout=flags.dropout,
                        temp=flags.temp, qxy=flags.qxy, bidirectional=flags.bidirectional)
    lexicon = main.copy_translation_scan(vocab_x, vocab_y)
    model.pyx.decoder.copy_translation = lexicon
    return model, lexicon


# ---------------------------------------------------------------------------------------------------- our model
def build_ours(raw, dim: int, layers: int, feed_dropout: bool = True, settings: str = ""):
    """Our model as run_lexical builds it with the paper/scan preset (sizes replaced, `settings` "NAME=VALUE,…" over
    it), its tokenizer and lexicon."""
    _, preset = preset_defaults("lstm", "paper", "scan", "template_around_right")
    fields = {f.name for f in dataclasses.fields(ModelArguments)}
    model_values = {k: v for k, v in preset.items() if k in fields}
    model_values.update(embedding_size=dim, hidden_size=dim, num_layers=layers, feed_dropout=feed_dropout)
    for item in filter(None, settings.split(",")):
        name, value = item.split("=", 1)
        try:
            model_values[name] = json.loads(value)  # numbers, true / false
        except json.JSONDecodeError:
            model_values[name] = value
    model_args = ModelArguments(**model_values)
    lexicon_args = LexiconArguments(lexicon="simple", lexicon_fallback=preset["lexicon_fallback"])
    tokenizer = lexical_hf.LexicalTokenizer.from_dataset(raw["train"], source_bos=preset["source_bos"])
    lexicon = lexical_hf.learn_lexicon(raw["train"], method="simple", fallback=preset["lexicon_fallback"])
    model = build_model(model_args, lexicon_args, tokenizer, lexicon)
    return model, tokenizer, lexicon, preset


# ---------------------------------------------------------------------------------------------------- id maps
def id_maps(tokenizer, vocab_x, vocab_y):
    """ours id -> code id on the source side, and ours output class -> code class on the target side (our extra
    last class, the copy class, -> their <copy>). Their <copy> rows have no counterpart (never an input)."""
    source = {i: vocab_x[w] for w, i in tokenizer.source_vocab.items()}  # the special tokens have the same strings
    target = {i: vocab_y[w] for w, i in tokenizer.target_vocab.items()}
    target[tokenizer.target_vocab_size] = vocab_y.copy()
    for name, ours, vocab in (("source", source, vocab_x), ("target", target, vocab_y)):
        missing = set(range(len(vocab))) - set(ours.values()) - {vocab.copy()}
        if missing or len(set(ours.values())) != len(ours):
            raise RuntimeError(f"{name} vocabularies differ: code ids without a counterpart {sorted(missing)}")
    return source, target


def compare_lexicons(model, tokenizer, vocab_x, vocab_y, code_lexicon, source_map):
    """Row by row: our L's output for each source token against theirs; a row whose target is masked at the output
    (theirs: <pad>, <s>, <copy>, <unk>; ours: <unk>, <pad>, <s>) counts as 'abstain'."""
    matrix = model.lexical_head.lexicon_matrix()
    ours_target = {i: w for w, i in tokenizer.target_vocab.items()}
    code_masked = {vocab_y.pad(), vocab_y.sos(), vocab_y.copy(), vocab_y.unk()}
    ours_masked = {tokenizer.target_vocab[w] for w in ("<pad>", "<s>", "<unk>")}
    rows, differ = {}, []
    for word, i in sorted(tokenizer.source_vocab.items(), key=lambda item: item[1]):
        row = matrix[i]
        if not torch.isclose(row.max(), torch.tensor(1.0)):
            raise RuntimeError(f"our lexicon row {word!r} is not one-hot: {row.tolist()}")
        ours = int(row.argmax())
        ours_word = "<abstain>" if ours in ours_masked else ours_target[ours]
        theirs = int(code_lexicon[source_map[i]])
        theirs_word = "<abstain>" if theirs in code_masked else vocab_y.get(theirs)
        rows[word] = {"ours": ours_target[ours], "code": vocab_y.get(theirs), "same": ours_word == theirs_word}
        if ours_word != theirs_word:
            differ.append(word)
    return {"rows": rows, "rows_that_differ": differ}


# ---------------------------------------------------------------------------------------------------- weights
def permute_rows(tensor: torch.Tensor, mapping: dict[int, int], rows: int) -> torch.Tensor:
    """Row i of ours at row mapping[i] of theirs; rows without a counterpart are zero (their never-read <copy>)."""
    out = tensor.new_zeros((rows, *tensor.shape[1:]))
    out[list(mapping.values())] = tensor[list(mapping.keys())]
    return out


def combine_columns(weight: torch.Tensor, embedding: int, hidden: int) -> torch.Tensor:
    """W_o: our input blocks [c_i | h_i | emb(y_{i-1}) | o_{i-1}] -> the code's [emb | o_{i-1} | h_i | c_i]
    (its all_features = cat(inp = dropout([emb; feed]), hidden, summary))."""
    context, top = weight[:, :hidden], weight[:, hidden : 2 * hidden]
    emb, feed = weight[:, 2 * hidden : 2 * hidden + embedding], weight[:, 2 * hidden + embedding :]
    return torch.cat([emb, feed, top, context], 1)


def to_code_layout(ours: dict[str, torch.Tensor], source_map, target_map, sizes) -> tuple[dict, dict]:
    """Our tensors (parameters or gradients, by our names) as the code's (by its names in Mutex). Returns the
    tensors and {code name: (our name, how)}."""
    n_x, n_y, embedding, hidden = sizes
    out, how = {}, {}

    def put(code_name, ours_name, tensor, description):
        out[code_name], how[code_name] = tensor, (ours_name, description)

    put("pyx.encoder.embed.weight", "model.encoder.embed_tokens.weight",
        permute_rows(ours["model.encoder.embed_tokens.weight"], source_map, n_x), "rows by source id map")
    put("pyx.decoder.embed.weight", "model.decoder.embed_tokens.weight",
        permute_rows(ours["model.decoder.embed_tokens.weight"], {k: v for k, v in target_map.items() if k < n_y - 1}, n_y),
        "rows by target id map")
    for side, code_side in (("encoder", "encoder"), ("decoder", "decoder")):
        prefix = f"model.{side}.lstm."
        for name in [n for n in ours if n.startswith(prefix)]:
            put(f"pyx.{code_side}.rnn.{name[len(prefix):]}", name, ours[name], "as is (nn.LSTM layout)")
    for part in ("weight", "bias"):
        put(f"pyx.decoder.attention_0.make_query.{part}", f"model.decoder.attention_query.{part}",
            ours[f"model.decoder.attention_query.{part}"], "as is")
        put(f"pyx.decoder.predict.{part}", f"lexical_head.write_projection.{part}",
            permute_rows(ours[f"lexical_head.write_projection.{part}"], target_map, n_y),
            "rows by output class map (our last class = their <copy>)")
    put("pyx.decoder.combine.weight", "model.decoder.combine.weight",
        combine_columns(ours["model.decoder.combine.weight"], embedding, hidden), "columns [c|h|emb|o] -> [emb|o|h|c]")
    put("pyx.decoder.combine.bias", "model.decoder.combine.bias", ours["model.decoder.combine.bias"], "as is")
    return out, how


def load_into_code(code_model, ours_model, source_map, target_map, sizes) -> dict:
    """Copy our weights into theirs; fail on any parameter of either side that is neither mapped nor known unused."""
    ours = dict(ours_model.named_parameters())
    mapped, how = to_code_layout(ours, source_map, target_map, sizes)
    leftover_ours = set(ours) - {name for name, _ in how.values()}
    code_params = dict(code_model.named_parameters())
    unused = sorted(n for n in code_params if n not in mapped and n.startswith(UNUSED_CODE_PARAMETERS))
    leftover_code = sorted(set(code_params) - set(mapped) - set(unused))
    unknown = sorted(set(mapped) - set(code_params))
    if leftover_ours or leftover_code or unknown:
        raise RuntimeError(f"unmapped parameters: ours {sorted(leftover_ours)}, code {leftover_code}, "
                           f"mapped names the code lacks {unknown}")
    with torch.no_grad():
        for name, tensor in mapped.items():
            if code_params[name].shape != tensor.shape:
                raise RuntimeError(f"{name}: code shape {tuple(code_params[name].shape)}, ours mapped {tuple(tensor.shape)}")
            code_params[name].copy_(tensor)
    return {"mapped": {k: {"ours": v[0], "how": v[1], "shape": list(mapped[k].shape)} for k, v in how.items()},
            "code_only_unused": unused,
            "code_rows_without_counterpart": ["pyx.encoder.embed.weight[<copy>]", "pyx.decoder.embed.weight[<copy>]"]}


# ---------------------------------------------------------------------------------------------------- batches
def pick_pairs(split, size: int, rng: random.Random, exclude_target_length: int | None = None) -> list[tuple[str, str]]:
    """`size` random pairs, sorted by source length, longest first (the code's collate order; the sort is stable)."""
    indices = list(range(len(split)))
    rng.shuffle(indices)
    pairs = []
    for i in indices:
        source, target = split[i]["source"], split[i]["target"]
        if exclude_target_length is None or len(target.split()) != exclude_target_length:
            pairs.append((source, target))
        if len(pairs) == size:
            break
    return sorted(pairs, key=lambda pair: -len(pair[0].split()))


def encode_ours(tokenizer, pairs) -> dict:
    batch = tokenizer([s for s, _ in pairs], text_target=[t for _, t in pairs], padding=True, return_tensors="pt")
    labels = batch["labels"].masked_fill(batch["labels"] == tokenizer.pad_token_id, -100)
    return {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"], "labels": labels}


def encode_code(data, vocab_x, vocab_y, pairs):
    """(inp (S,B), out (T,B), lens) as their collate makes them; checks the row order is ours."""
    encoded = [data.encode_io((s.split(), t.split()), vocab_x, vocab_y) for s, t in pairs]
    inp, out, lens = data.collate(encoded)
    for b, (source, _) in enumerate(pairs):
        if data.eval_format(vocab_x, inp[:, b].tolist()) != source.split():
            raise RuntimeError("the code's collate reordered the batch")
    return inp, out, lens


# ---------------------------------------------------------------------------------------------------- scoring
def code_token_log_probs(encdec, inp, out, lens):
    """(B, T) log p of each target token under the code's model (what its CrossEntropyLoss reads: log_softmax of the
    decoder's masked log-mixture) and the (B, T) mask of real targets; the code's own per_instance NLL beside it."""
    hidden, state = encdec.encoder(inp, lens=lens)
    dec, *_ = encdec.decoder(encdec.pass_hiddens(state), out.shape[0] - 1, ref_tokens=out[:-1],
                             att_features=[encdec.proj(hidden)], att_tokens=[inp])
    target = out[1:]
    token = dec.log_softmax(-1).gather(-1, target.unsqueeze(-1)).squeeze(-1)
    mask = target != encdec.vocab_y.pad()
    return (token * mask).T, mask.T


def code_head_log_probs(model, features, attention, source_ids):
    """The code's output arithmetic on our backbone's outputs: s = softmax over every class (no mask), comb = s_w +
    s_copy·p_lex(w) + ε, log, <pad>/<s>/<unk> (and the copy class) masked, renormalised (the loss's log_softmax)."""
    head = model.lexical_head
    probs = head.write_projection(head.output_dropout(features)).float().softmax(-1)
    lexical = torch.bmm(attention.float(), head.lexicon_matrix()[source_ids])
    combined = (probs[..., :-1] + probs[..., -1:] * lexical + EPS).log()
    config = model.config
    masked = [config.pad_token_id, config.decoder_start_token_id, config.unk_token_id]
    combined = combined.index_fill(-1, torch.tensor(masked), float("-inf"))
    return combined.log_softmax(-1)


def ours_scores(model, batch):
    """Our per-token log p (B, T), the same under the code's head arithmetic, the mask, and our loss."""
    output = model(**batch, output_hidden_states=True)
    labels = batch["labels"]
    mask = labels != -100
    index = labels.clamp_min(0).unsqueeze(-1)
    ours = output.logits.gather(-1, index).squeeze(-1).masked_fill(~mask, 0.0)
    hybrid = code_head_log_probs(model, output.decoder_hidden_states[0], output.cross_attentions[0], batch["input_ids"])
    hybrid = hybrid.gather(-1, index).squeeze(-1).masked_fill(~mask, 0.0)
    unk = output.logits[..., model.config.unk_token_id].exp()  # the mass our mixture leaves on <unk>
    return ours, hybrid, mask, output.loss, unk


def max_abs(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max())


def check_eval(code_model, model, code_batch, batch) -> dict:
    """(a) eval mode: per-token log p and per-sequence NLL, code against ours and against ours + code head."""
    code_model.eval(), model.eval()
    with torch.no_grad():
        code_tok, code_mask = code_token_log_probs(code_model.pyx, *code_batch)
        code_seq = code_model.pyx(*code_batch[:2], lens=code_batch[2], per_instance=True)
        ours_tok, hybrid_tok, mask, loss, unk = ours_scores(model, batch)
    if not torch.equal(code_mask, mask):
        raise RuntimeError("target positions differ between the two encodings")
    renormalised = (ours_tok - torch.log1p(-unk)).masked_fill(~mask, 0.0)  # ours divided by 1 - p(<unk>)
    return {
        "code_per_instance_vs_own_token_sum": max_abs(code_seq, -code_tok.sum(1)),
        "per_token_max_abs_diff": {"ours": max_abs(code_tok, ours_tok), "ours_renormalised_without_unk":
                                   max_abs(code_tok, renormalised),
                                   "ours_backbone_code_head": max_abs(code_tok, hybrid_tok)},
        "per_sequence_nll_max_abs_diff": {"ours": max_abs(-code_tok.sum(1), -ours_tok.sum(1)),
                                          "ours_backbone_code_head": max_abs(-code_tok.sum(1), -hybrid_tok.sum(1))},
        "mean_nll_per_sequence": {"code": float(-code_tok.sum(1).mean()), "ours": float(-ours_tok.sum(1).mean()),
                                  "ours_backbone_code_head": float(-hybrid_tok.sum(1).mean()), "ours_loss": float(loss)},
        "ours_p_unk_at_target_positions": {"mean": float(unk[mask].mean()), "max": float(unk[mask].max())},
        "tokens": int(mask.sum()),
    }


def check_gradients(code_model, model, code_batch, batch, source_map, target_map, sizes) -> dict:
    """(b) eval mode: gradients of the summed NLL, per mapped tensor: max |g_code − g_ours| / max |g_code|."""
    code_model.eval(), model.eval()
    code_model.zero_grad()
    code_model.pyx(*code_batch[:2], lens=code_batch[2], per_instance=True).sum().backward()
    code_grads = {n: p.grad for n, p in code_model.named_parameters() if p.grad is not None}
    unused_with_gradient = [n for n in code_grads if n.startswith(UNUSED_CODE_PARAMETERS) and code_grads[n].abs().max() > 0]
    result = {"code_params_listed_unused_but_with_gradient": unused_with_gradient}
    for variant in ("ours", "ours_backbone_code_head"):
        model.zero_grad()
        ours_tok, hybrid_tok, *_ = ours_scores(model, batch)
        (-(ours_tok if variant == "ours" else hybrid_tok).sum()).backward()
        grads = {n: (p.grad if p.grad is not None else torch.zeros_like(p)) for n, p in model.named_parameters()}
        mapped, _ = to_code_layout(grads, source_map, target_map, sizes)
        relative = {n: float((code_grads[n] - g).abs().max() / code_grads[n].abs().max().clamp_min(1e-30))
                    for n, g in mapped.items()}
        worst = max(relative, key=relative.get)
        result[variant] = {"max_relative_diff": relative[worst], "worst_tensor": worst, "per_tensor": relative}
    model.zero_grad(), code_model.zero_grad()
    return result


def mean_and_error(values: list[float], chunks: int = 10) -> dict:
    """Mean, sd and standard error of the mean: the larger of sd/√N and the batch-means error (sd of the means of
    `chunks` consecutive blocks / √chunks), which also covers correlation between successive draws."""
    array = np.asarray(values)
    naive = array.std(ddof=1) / math.sqrt(len(array))
    blocks = array[: len(array) // chunks * chunks].reshape(chunks, -1).mean(1)
    batch_means = blocks.std(ddof=1) / math.sqrt(chunks)
    return {"mean": float(array.mean()), "std": float(array.std(ddof=1)), "standard_error": float(max(naive, batch_means)),
            "naive_standard_error": float(naive), "batch_means_standard_error": float(batch_means), "draws": len(array)}


def z_score(a: dict, b: dict) -> float:
    return (a["mean"] - b["mean"]) / math.hypot(a["standard_error"], b["standard_error"])


def dropout_draws(code_model, models: dict, code_batch, batch, draws: int) -> dict:
    """(c) train mode: the batch loss (summed NLL / batch size) over `draws` dropout draws of each model, on the
    same weights and batch; for ours also the same draw scored with the code's head arithmetic (their paired
    difference measures the head alone)."""
    code_model.train()
    losses = {"code": []}
    with torch.no_grad():
        for _ in range(draws):
            losses["code"].append(float(code_model.pyx(*code_batch[:2], lens=code_batch[2])))
        for name, model in models.items():
            model.train()
            losses[name], losses[name + "+code_head"] = [], []
            for _ in range(draws):
                ours_tok, hybrid_tok, _, loss, _ = ours_scores(model, batch)
                losses[name].append(float(loss))
                losses[name + "+code_head"].append(float(-hybrid_tok.sum() / hybrid_tok.shape[0]))
            model.eval()
    code_model.eval()
    stats = {name: mean_and_error(values) for name, values in losses.items()}
    for name in stats:
        if name != "code":
            stats[name]["z_vs_code"] = z_score(stats[name], stats["code"])
    for name in models:
        paired = np.asarray(losses[name]) - np.asarray(losses[name + "+code_head"])
        stats[name]["minus_code_head_same_draws"] = mean_and_error(paired)
    return stats


@contextmanager
def tagged_dropout(code_model, models):
    """Dropout made deterministic and rate-tagged: F.dropout(x, p) = x·(1 + p) in train mode, so two models give
    equal train-mode outputs only if they apply the same rates at the same places. Dropout between LSTM layers runs
    inside the fused kernel (the code's nn.LSTM) where it cannot be tagged: it is set to 0 on both sides meanwhile."""
    original = F.dropout
    lstms = [code_model.pyx.encoder.rnn, code_model.pyx.decoder.rnn]
    lstms += [lstm for model in models for lstm in (model.model.encoder.lstm, model.model.decoder.lstm)]
    rates = [lstm.dropout for lstm in lstms]
    torch.nn.functional.dropout = lambda input, p=0.5, training=True, inplace=False: input * (1 + p) if training else input
    try:
        for lstm in lstms:
            lstm.dropout = 0.0
        yield
    finally:
        torch.nn.functional.dropout = original
        for lstm, rate in zip(lstms, rates):
            lstm.dropout = rate


def check_tagged_dropout(code_model, models: dict, code_batch, batch) -> dict:
    """(c') train mode under `tagged_dropout`: per-token log p, code against each of our models (+ code head)."""
    result = {}
    with tagged_dropout(code_model, models.values()), torch.no_grad():
        code_model.train()
        code_tok, _ = code_token_log_probs(code_model.pyx, *code_batch)
        for name, model in models.items():
            model.train()
            ours_tok, hybrid_tok, *_ = ours_scores(model, batch)
            result[name] = {"ours": max_abs(code_tok, ours_tok), "ours_backbone_code_head": max_abs(code_tok, hybrid_tok)}
            model.eval()
        code_model.eval()
    return result

def check_decoding(code_model, model, tokenizer, data, vocab_x, vocab_y, pairs) -> dict:
    """(d) greedy decoding, eval mode: their Mutex.sample as their validate() calls it, our generate()."""
    code_model.eval(), model.eval()
    inp, _, lens = encode_code(data, vocab_x, vocab_y, pairs)
    batch = encode_ours(tokenizer, pairs)
    with torch.no_grad():
        predictions, _ = code_model.sample(inp, lens=lens, temp=1.0, max_len=code_model.MAXLEN_Y, greedy=True,
                                           beam_size=0, calc_score=False)
        generated = model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], num_beams=1,
                                   do_sample=False)
    code_out = [" ".join(data.eval_format(vocab_y, p)) for p in predictions]
    ours_out = tokenizer.batch_decode(generated, skip_special_tokens=True)
    rows = [{"source": s, "gold": t, "code": c, "ours": o} for (s, t), c, o in zip(pairs, code_out, ours_out)]
    cap = code_model.MAXLEN_Y - 1  # the code forces </s> after this many tokens; ours stops at max_decode_length
    within_cap = lambda r: r["code"] == r["ours"] or (len(r["code"].split()) == cap and r["ours"].split()[:cap] == r["code"].split())
    return {"sentences": len(rows), "identical": sum(r["code"] == r["ours"] for r in rows),
            "identical_up_to_code_length_cap": sum(map(within_cap, rows)), "code_length_cap": cap,
            "exact_match": {"code": sum(r["code"] == r["gold"] for r in rows), "ours": sum(r["ours"] == r["gold"] for r in rows)},
            "differing": [r for r in rows if r["code"] != r["ours"]], "examples": rows[:3]}


def check_longest_targets(code_model, model, tokenizer, data, vocab_x, vocab_y, split, max_y: int) -> dict:
    """The code forces </s> at step MAXLEN_Y − 1 (`t == self.MAXLEN-1` in its decoder): on the longest training
    targets the final </s> then costs ~0. Compare that token's log p, code against ours + code head."""
    pairs = [(row["source"], row["target"]) for row in split if len(row["target"].split()) == max_y - 1][:4]
    if not pairs:
        return {"pairs": 0}
    pairs = sorted(pairs, key=lambda pair: -len(pair[0].split()))
    code_model.eval(), model.eval()
    with torch.no_grad():
        code_tok, mask = code_token_log_probs(code_model.pyx, *encode_code(data, vocab_x, vocab_y, pairs))
        _, hybrid_tok, *_ = ours_scores(model, encode_ours(tokenizer, pairs))
    last = mask.sum(1) - 1
    rows = torch.arange(len(pairs))
    return {"pairs": len(pairs), "train_pairs_with_longest_target": sum(len(r["target"].split()) == max_y - 1 for r in split),
            "final_eos_log_p": {"code": code_tok[rows, last].tolist(), "ours_backbone_code_head": hybrid_tok[rows, last].tolist()},
            "other_tokens_max_abs_diff": max_abs(code_tok[:, :-1] * mask[:, :-1], hybrid_tok[:, :-1] * mask[:, :-1])}


def pretrain(model, tokenizer, split, steps: int, batch: int, optimizer, rng: random.Random) -> dict:
    """Adam updates of our model (train mode, its own loss), so that the checks run on non-trivial weights."""
    model.train()
    losses = []
    for _ in range(steps):
        loss = model(**encode_ours(tokenizer, pick_pairs(split, batch, rng))).loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    return {"steps": steps, "lr": optimizer.param_groups[0]["lr"], "first_10_mean_loss": float(np.mean(losses[:10])),
            "last_10_mean_loss": float(np.mean(losses[-10:]))}


# ---------------------------------------------------------------------------------------------------- report
def provenance(args, code_source: str) -> dict:
    def version(module):
        try:
            return importlib.metadata.version(module)
        except importlib.metadata.PackageNotFoundError:
            return None
    git = lambda *cmd: subprocess.run(["git", *cmd], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return {"command": "python " + " ".join(sys.argv),
            "python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
            "lexical_hf": lexical_hf.__version__, "transformers": version("transformers"), "absl_py": version("absl-py"),
            "repository_head": git("rev-parse", "--short", "HEAD"), "repository_dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
            "code_sha256": {f: hashlib.sha256((Path(code_source) / f).read_bytes()).hexdigest()[:16] for f in CODE_FILES},
            "threads": torch.get_num_threads(), "settings": vars(args)}


def stage_verdicts(stage: dict) -> dict:
    same = lambda x: "same" if x else "DIFFERENT"
    a = stage["a_eval"]["per_token_max_abs_diff"]
    out = {"a_eval_ours": same(a["ours"] < 1e-4), "a_eval_ours_backbone_code_head": same(a["ours_backbone_code_head"] < 1e-4)}
    if "b_gradients" in stage:
        b = stage["b_gradients"]
        out["b_gradients_ours"] = same(b["ours"]["max_relative_diff"] < 1e-3)
        out["b_gradients_ours_backbone_code_head"] = same(b["ours_backbone_code_head"]["max_relative_diff"] < 1e-3)
    out.update({f"c_dropout_{name}": same(abs(stats["z_vs_code"]) < 3)
                for name, stats in stage["c_dropout"].items() if name != "code"})
    out.update({f"c_tagged_dropout_{name}+code_head": same(diff["ours_backbone_code_head"] < 1e-4)
                for name, diff in stage["c_tagged_dropout"].items()})
    if "d_greedy" in stage:
        d = stage["d_greedy"]
        out["d_greedy"] = same(d["identical"] == d["sentences"])
        out["d_greedy_up_to_code_length_cap"] = same(d["identical_up_to_code_length_cap"] == d["sentences"])
    return out


def stage_rows(name: str, stage: dict) -> list[str]:
    a, c, v = stage["a_eval"], stage["c_dropout"], stage["verdicts"]
    diff, nll = a["per_token_max_abs_diff"], a["mean_nll_per_sequence"]
    rows = [f"| **{name}**: ours after {stage['pretrain']['updates_so_far']} updates | | |",
            f"| (a) per-token log p, max abs diff: ours | {diff['ours']:.3g} | {v['a_eval_ours']} |",
            f"| (a) … ours ÷ (1 − p_ours(<unk>)) (no ε) | {diff['ours_renormalised_without_unk']:.3g} | |",
            f"| (a) … ours backbone + code head | {diff['ours_backbone_code_head']:.3g} | {v['a_eval_ours_backbone_code_head']} |",
            f"| (a) mean NLL / sequence: code · ours · ours+code head | {nll['code']:.4f} · {nll['ours']:.4f} · "
            f"{nll['ours_backbone_code_head']:.4f} | |"]
    if "b_gradients" in stage:
        b = stage["b_gradients"]
        rows += [f"| (b) gradients, max relative diff: ours | {b['ours']['max_relative_diff']:.3g} ({b['ours']['worst_tensor']}) "
                 f"| {v['b_gradients_ours']} |",
                 f"| (b) … ours backbone + code head | {b['ours_backbone_code_head']['max_relative_diff']:.3g} | "
                 f"{v['b_gradients_ours_backbone_code_head']} |"]
    for model_name, stats in c.items():
        z = f", z = {stats['z_vs_code']:+.1f}" if model_name != "code" else ""
        rows.append(f"| (c) train-mode loss, {model_name} | {stats['mean']:.4f} ± {stats['standard_error']:.4f} "
                    f"(sd {stats['std']:.3f}, N {stats['draws']}){z} | {v.get(f'c_dropout_{model_name}', '')} |")
        if "minus_code_head_same_draws" in stats:
            paired = stats["minus_code_head_same_draws"]
            rows.append(f"| (c) … {model_name} − {model_name}+code_head, same draws (the head alone) | "
                        f"{paired['mean']:+.4f} ± {paired['standard_error']:.4f} | |")
    for model_name, tagged in stage["c_tagged_dropout"].items():
        rows.append(f"| (c') rate-tagged dropout, per-token max abs diff, {model_name}: ours · +code head | "
                    f"{tagged['ours']:.3g} · {tagged['ours_backbone_code_head']:.3g} | "
                    f"{v[f'c_tagged_dropout_{model_name}+code_head']} |")
    if "d_greedy" in stage:
        d = stage["d_greedy"]
        rows.append(f"| (d) greedy outputs identical | {d['identical']}/{d['sentences']}; up to the code's "
                    f"{d['code_length_cap']}-token cap {d['identical_up_to_code_length_cap']}/{d['sentences']} (exact match "
                    f"code {d['exact_match']['code']}, ours {d['exact_match']['ours']}) | {v['d_greedy']} |")
    if "longest_targets" in stage and stage["longest_targets"].get("pairs"):
        q = stage["longest_targets"]["final_eos_log_p"]
        rows.append(f"| forced </s> at MAXLEN−1: final </s> log p, code · ours+code head | {q['code'][0]:.3g} · "
                    f"{q['ours_backbone_code_head'][0]:.3g} | |")
    return rows


def markdown(results: dict) -> str:
    prov = results["provenance"]
    lines = ["# Paper code equivalence (SCAN template_around_right, CPU)", "",
             f"`{prov['command']}` — python {prov['python']}, torch {prov['torch']}, lexical_hf {prov['lexical_hf']}, "
             f"repository {prov['repository_head']}{' (dirty)' if prov['repository_dirty'] else ''}, "
             f"{results['runtime_s']:.0f} s on {prov['threads']} thread.", "",
             f"Models: dim {results['sizes']['dim']}, {results['sizes']['layers']} layers, dropout 0.4, high drop = "
             "output_dropout 0.5, our weights copied into theirs (every parameter mapped or listed unused). Lexicon "
             f"rows that differ: {results['lexicon']['rows_that_differ'] or 'none'}. Batch: {results['batch']} training pairs. "
             f"Ours: the paper/scan preset{' with ' + results['ours_settings'] if results.get('ours_settings') else ''} "
             f"(output layer: {output_settings(results)}).", "",
             "(a), (b), (c') are exact (threshold 1e-4 absolute, 1e-3 relative); (c) is statistical (|z| < 3 counts as "
             "the same; the error is the larger of sd/√N and the batch-means error). 'ours + code head' is our backbone "
             "with the code's output arithmetic.",
             "", "| check | result | verdict |", "|---|---|---|"]
    for name in ("early", "later"):
        lines += stage_rows(name, results[name])
    lines += ["", "Differences found:", ""] + [f"* {item}" for item in results["differences"]]
    return "\n".join(lines) + "\n"


def output_settings(results: dict) -> str:
    """Our output layer's two settings as the check ran them (for reports written before they were recorded: the
    `--ours` flags)."""
    output = results.get("ours_output")
    if output is None:
        return results.get("ours_settings") or "the preset's settings"
    return ",".join(f"{name}={value}" for name, value in output.items())


def differences(results: dict) -> list[str]:
    """What the numbers say, in words (the structural notes come from reading both codes; the numbers test them)."""
    early, later = results["early"], results["later"]
    unk = lambda stage: stage["a_eval"]["ours_p_unk_at_target_positions"]["mean"]
    head = lambda stage: stage["c_dropout"]["ours"]["minus_code_head_same_draws"]["mean"]
    grad = lambda stage: stage["b_gradients"]["ours"]
    same_head = max(stage["a_eval"]["per_token_max_abs_diff"]["ours"] for stage in (early, later)) < 1e-4
    normalisation = (
        f"Output normalisation: ours with {output_settings(results)} computes the code's to float rounding (eval "
        f"log p max abs diff {early['a_eval']['per_token_max_abs_diff']['ours']:.2g} early, "
        f"{later['a_eval']['per_token_max_abs_diff']['ours']:.2g} later; gradients "
        f"{grad(early)['max_relative_diff']:.2g} and {grad(later)['max_relative_diff']:.2g} relative)."
    ) if same_head else (
        "Output normalisation (the one difference in the function): the code's CrossEntropyLoss applies log_softmax "
        "to log(comb) after <pad>/<s>/<copy>/<unk> are masked (−99999), so its mixture is renormalised over </s> and "
        "the words: the write mass of <unk> and the copy mass on abstaining source tokens (<s>, and function words, "
        "whose lexicon row is all-zero → argmax <pad>) are dropped and the rest rescaled. Ours keeps <unk> in the "
        "loss's normaliser (only `generate` suppresses it) and puts the abstaining lexicon mass there, so log p_ours "
        "= log p_code + log(1 − p_ours(<unk>)) up to ε. Mean p_ours(<unk>) at target positions: "
        f"{results['a_eval_at_initialisation']['ours_p_unk_at_target_positions']['mean']:.3g} at initialisation, "
        f"{unk(early):.3g} early, {unk(later):.3g} later; train-mode loss excess of ours over the code head on the same "
        f"draws {head(early):+.4f} early, {head(later):+.4f} later (per sequence); gradient max relative difference "
        f"{grad(early)['max_relative_diff']:.3g} early ({grad(early)['worst_tensor']}), "
        f"{grad(later)['max_relative_diff']:.3g} later. The gradient of ours also pushes attention away from "
        "abstaining tokens while the copy class is likely, which the code's does not. `mixture_normalization=code` "
        "(with `probability_floor=1e-7`) is the code's arithmetic: rerun with `--ours` to check.")
    return [
        normalisation,
        f"Probability floor: the code adds ε = 1e-7 to every class before the log (ours: {output_settings(results)}); "
        "without it, it accounts for the remaining ~1e-5 between 'ours ÷ (1 − p(<unk>))' and the code.",
        "Forced </s>: the code adds +99999 to </s> at decoder step MAXLEN_Y − 1 (teacher forcing and decoding), so the "
        "final </s> of the longest training targets (48 tokens; "
        f"{later['longest_targets'].get('train_pairs_with_longest_target', 0)} training pairs) costs 0 and greedy "
        "outputs stop after 48 tokens; ours scores that </s> normally and decodes up to max_decode_length.",
        "Dead output rows: the code's predict rows for <pad>, <s>, <unk> enter only through ε; ours with "
        f"mixture_normalization=paper blocks <pad>/<s> before the softmax and trains the <unk> row (ours: "
        f"{output_settings(results)}).",
        "Same to float rounding (with the code's head arithmetic on our features): encoder (embedding dropout, packed "
        "2-layer LSTM), decoder initial state (encoder final h, c; o_0 = 0), input feeding, attention (query with "
        "bias, dot product with encoder states, padding masked), W_o over [emb; o_{i-1}; h_i; c_i] without a "
        "nonlinearity, the copy-class mixture and the lexicon lookup, and the per-sequence loss: eval log p max abs diff "
        f"{early['a_eval']['per_token_max_abs_diff']['ours_backbone_code_head']:.2g}, gradients "
        f"{early['b_gradients']['ours_backbone_code_head']['max_relative_diff']:.2g} relative.",
        "Dropout placement is the same: with rate-tagged deterministic dropout the train-mode outputs match "
        f"(max abs diff {early['c_tagged_dropout']['ours']['ours_backbone_code_head']:.2g}); the feed_dropout=False "
        f"variant does not ({early['c_tagged_dropout']['feed_dropout_false']['ours_backbone_code_head']:.3g}). Sites: "
        "0.4 on source embeddings, between LSTM layers (encoder and decoder), on [emb(y_{i-1}); o_{i-1}] at the "
        "decoder input (the same dropped vector feeds W_o), and 0.4 then 0.5 on W_o's output, which is both p_write's "
        "input and the next o_i.",
    ]


def main(argv=None) -> dict:
    args = parse_args(argv)
    torch.set_num_threads(1)
    start = time.time()
    workdir = Path(tempfile.mkdtemp(prefix="paper_code_equivalence."))
    try:
        results = run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results["runtime_s"] = time.time() - start
    results["differences"] = differences(results)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    text = markdown(results)
    out.with_suffix(".md").write_text(text)
    print(text)
    return results


def run(args, workdir: Path) -> dict:
    code = prepare_code(args.paper_code, args.shim, args.wheels, workdir)
    main_module, mutex, data = import_code(code, args.dim, args.layers)
    raw = lexical_hf.load_benchmark("scan", "template_around_right", data_dir=args.data_dir, validation_fraction=0.01)
    torch.manual_seed(args.seed)
    model, tokenizer, lexicon, preset = build_ours(raw, args.dim, args.layers, settings=args.ours)
    variant, *_ = build_ours(raw, args.dim, args.layers, feed_dropout=False, settings=args.ours)
    vocab_x, vocab_y, max_x, max_y = code_vocabularies(main_module, code)
    code_model, code_lexicon = build_code_model(main_module, mutex, vocab_x, vocab_y, max_x, max_y, args.seed)
    source_map, target_map = id_maps(tokenizer, vocab_x, vocab_y)
    sizes = (len(vocab_x), len(vocab_y), args.dim, args.dim)
    results = {"provenance": provenance(args, args.paper_code), "sizes": {"dim": args.dim, "layers": args.layers},
               "batch": args.batch, "preset": preset, "ours_settings": args.ours,
               "ours_output": {"mixture_normalization": model.config.mixture_normalization,
                               "probability_floor": model.config.probability_floor},
               "id_maps": id_map_report(tokenizer, vocab_x, vocab_y, source_map, target_map),
               "lexicon": compare_lexicons(model, tokenizer, vocab_x, vocab_y, code_lexicon, source_map)}
    pairs = pick_pairs(raw["train"], args.batch, random.Random(args.seed), exclude_target_length=max_y - 1)
    batch, code_batch = encode_ours(tokenizer, pairs), encode_code(data, vocab_x, vocab_y, pairs)
    results["weights"] = load_into_code(code_model, model, source_map, target_map, sizes)
    results["a_eval_at_initialisation"] = check_eval(code_model, model, code_batch, batch)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.998))
    rng, done = random.Random(args.seed + 1), 0
    for name, steps in (("early", args.pretrain_steps), ("later", args.later_steps)):
        stage = {"pretrain": pretrain(model, tokenizer, raw["train"], steps, args.batch, optimizer, rng)}
        done += steps
        stage["pretrain"]["updates_so_far"] = done
        load_into_code(code_model, model, source_map, target_map, sizes)
        variant.load_state_dict(model.state_dict())
        models = {"ours": model, "feed_dropout_false": variant}
        stage["a_eval"] = check_eval(code_model, model, code_batch, batch)
        stage["b_gradients"] = check_gradients(code_model, model, code_batch, batch, source_map, target_map, sizes)
        stage["c_dropout"] = dropout_draws(code_model, models, code_batch, batch, args.draws)
        stage["c_tagged_dropout"] = check_tagged_dropout(code_model, models, code_batch, batch)
        if name == "later":
            test_pairs = pick_pairs(raw["test"], args.decode, random.Random(args.seed + 2))
            stage["d_greedy"] = check_decoding(code_model, model, tokenizer, data, vocab_x, vocab_y, test_pairs)
            stage["longest_targets"] = check_longest_targets(code_model, model, tokenizer, data, vocab_x, vocab_y,
                                                             raw["train"], max_y)
        stage["verdicts"] = stage_verdicts(stage)
        results[name] = stage
    return results


def id_map_report(tokenizer, vocab_x, vocab_y, source_map, target_map) -> dict:
    ours_x = {i: w for w, i in tokenizer.source_vocab.items()}
    ours_y = {i: w for w, i in tokenizer.target_vocab.items()}
    ours_y[tokenizer.target_vocab_size] = "(copy class)"
    return {"source (ours id, code id)": {ours_x[i]: [i, j] for i, j in sorted(source_map.items())},
            "target (ours id, code id)": {ours_y[i]: [i, j] for i, j in sorted(target_map.items())},
            "code_only": {"source": ["<copy>"], "target_embedding": ["<copy>"]}}


if __name__ == "__main__":
    main()
