#!/usr/bin/env python
"""Reproduce one row of the paper's tables with `examples/run_lexical.py`, and rebuild `results/README.md`.

    python benchmarks/reproduce.py --task colors --row simple              # Colors, paper recipe, 16 seeds
    python benchmarks/reproduce.py --task scan-jump --row simple           # SCAN addprim_jump, CPU tier, 5 seeds
    python benchmarks/reproduce.py --task scan-jump --row simple --tier paper --seeds 0-9   # GPU tier
    python benchmarks/reproduce.py --task scan-jump --row lstm --seeds 2-4 --extend   # add seeds to a row file
    python benchmarks/reproduce.py --task copy --row queue-lstm --seeds 1 --rerun "stopped by hand"  # a seed again
    python benchmarks/reproduce.py --task scan-jump --row simple --publish # only the row's Hub-ready folder
    python benchmarks/reproduce.py --task scan-simple --row syntatt       # Syntactic Attention's SCAN splits, 10 seeds
    python benchmarks/reproduce.py --task reversal --row stack-lstm       # a Table 3 cell of Grefenstette et al., 3 seeds
    python benchmarks/reproduce.py --summarize                             # results/README.md + figures only

(`make reproduce TASK=scan-jump ROW=simple` runs the first form.) One call trains every seed of one cell row
(`--parallel_seeds` processes at a time, one CPU thread each), leaves the Hub-ready folder of the first seed in
`outputs/reproduce/lexical-<task>-<row>[-<tier>]` (weights, tokenizer, lexicon.json, results.json, model card) and
copies its results.json to `results/<task>/<row>[.<tier>].json` (eng-cmn: `results/mt/`). `--summarize` then writes `results/README.md`:
ours beside the paper's number for every row that was run, and a per-seed accuracy strip per task.

`--publish` rebuilds only a row's Hub-ready folder (never in git, so a fresh clone lacks it): it trains the row
file's first seed again with the settings the row file recorded, into the same folder, and checks that every test
metric equals the row's record for that seed (exit status 1 if one differs by more than `--tolerance`). The row
file is not changed. On the machine that wrote the row the run is deterministic, so the metrics agree exactly.

Tiers: `cpu` runs `--preset cpu` (reduced model and steps, see `examples/run_lexical.py`; Colors always runs the
paper recipe, it is tiny); `paper` runs `--preset paper` (2×512 LSTM, batch 128 × 4, 8,000 updates) and is meant for
a GPU. Every row file records its command, seeds, preset, machine and wall time.
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"

TASKS = {  # name → (run_lexical arguments, metric reported in the table, default seeds per tier)
    "colors": (["--benchmark", "colors"], "exact_match", {"cpu": "0-15", "paper": "0-15"}),
    "scan-jump": (["--benchmark", "scan", "--benchmark_config", "addprim_jump"], "exact_match", {"cpu": "0-4", "paper": "0-9"}),
    "scan-around-right": (["--benchmark", "scan", "--benchmark_config", "template_around_right"], "exact_match",
                          {"cpu": "0-4", "paper": "0-9"}),
    # the other two SCAN splits of Syntactic Attention's paper (the lexicon paper has no column for them)
    "scan-simple": (["--benchmark", "scan", "--benchmark_config", "simple"], "exact_match", {"cpu": "0-9", "paper": "0-9"}),
    "scan-turn-left": (["--benchmark", "scan", "--benchmark_config", "addprim_turn_left"], "exact_match",
                       {"cpu": "0-9", "paper": "0-9"}),
    "cogs": (["--benchmark", "cogs"], "exact_match", {"cpu": "0-2", "paper": "0-9"}),
    "eng-cmn": (["--benchmark", "eng_cmn"], "bleu_paper.score", {"cpu": "0-2", "paper": "0-9"}),
}
ROWS = {  # name → (table label, run_lexical arguments)
    "lstm": ("LSTM", ["--lexicon", "none"]),
    "copy": ("LSTM + copy", ["--lexicon", "copy"]),
    "simple": ("+ Lex: Simple", ["--lexicon", "simple"]),
    "pmi": ("+ Lex: PMI", ["--lexicon", "pmi"]),
    # the paper's IBM Model 2 numbers come from its released aligner (fast_align -o, intersect): variant=code
    "ibm2": ("+ Lex: IBM Model 2", ["--lexicon", "ibm2", "--lexicon_params", "variant=code"]),
    # the aligner as the paper describes it (diagonal prior, no NULL word): on SCAN the code variant's lexicon is
    # Simple's, while the paper's Figure 3 (around → I_TURN_LEFT) and its around_right number fit this one
    # (results/lexicon_rows.md); shown beside the paper's IBM Model 2 number
    "ibm2-prior": ("+ Lex: IBM Model 2, diagonal prior", ["--lexicon", "ibm2"]),
    "bayesian": ("+ Lex: Bayesian", ["--lexicon", "bayesian"]),
    "uniform": ("+ Lex: uniform, learned", ["--lexicon", "uniform", "--learn_lexicon", "true"]),
    "simple-soft": ("+ Lex: Simple, soft (τ = 0.1)", ["--lexicon", "simple", "--lexicon_temperature", "0.1"]),
    "simple-soft-learned": ("+ Lex: Simple, soft and fine-tuned",
                            ["--lexicon", "simple", "--lexicon_temperature", "0.1", "--learn_lexicon", "true"]),
    # Syntactic Attention (Russin et al. 2019) under the same head: alone (the paper's SyntAtt row) and with a lexicon
    "syntatt": ("SyntAtt", ["--backbone", "syntactic_attention", "--lexicon", "none"]),
    "syntatt-simple": ("SyntAtt + Lex: Simple", ["--backbone", "syntactic_attention", "--lexicon", "simple"]),
    # GECA (Andreas 2020) composed anew for every seed, each example drawn from it with probability 0.3 (the GECA
    # paper's protocol); the lexicon paper's GECA row (its Table 2) and GECA + lexicon, which neither paper reports
    "geca": ("LSTM + GECA", ["--lexicon", "none", "--augment", "geca"]),
    "geca-simple": ("+ Lex: Simple + GECA", ["--lexicon", "simple", "--augment", "geca"]),
}
# Grefenstette et al. (2015)'s five transduction tasks (its Table 3): task → the `transduction` builder's config. Their
# rows are the four backbones of that paper; the table reports coarse and fine accuracy on the training lengths
# (the builder's validation split: fresh samples) and on the test lengths.
TRANSDUCTION_TASKS = {"copy": "copy", "reversal": "reversal", "bigram-flip": "bigram_flip", "svo-sov": "svo_sov",
                      "gender-conjugation": "gender_conjugation"}
TASKS.update({task: (["--benchmark", "transduction", "--benchmark_config", config], "coarse_accuracy",
                     {"cpu": "0-2", "paper": "0-2"}) for task, config in TRANSDUCTION_TASKS.items()})
PAPER_WIDTH = ["--hidden_size", "256", "--memory_width", "256"]  # the paper's controller and memory width
# the paper's optimiser (RMSProp at its presets' 1e-3, batch 10, clipping at 1 as every preset) at the `cpu` tier's
# 300,000 sequences: 30,000 updates of 10 where the preset has 6,000 of 50 (rows for the `cpu` tier: the `paper` tier
# trains this way already, to a cap of 100,000)
PAPER_OPTIMISER = ["--optim", "rmsprop", "--per_device_train_batch_size", "10", "--max_steps", "30000"]
MEMORY_ROWS = {
    "deep-lstm": ("deep LSTM", ["--backbone", "deep_lstm", "--lexicon", "none"]),
    # the preset's recipe trained longer: 20,000 updates over 1,000,000 sequences, one pass (the preset: 6,000 over
    # 300,000); the paper trains its deep LSTMs to convergence, "orders of magnitude" later than the memory models
    "deep-lstm-long": ("deep LSTM, 20,000 updates",
                       ["--backbone", "deep_lstm", "--lexicon", "none", "--max_steps", "20000",
                        "--benchmark_params", "train_lengths=[8,64],train_size=1000000"]),
    "stack-lstm": ("Stack-LSTM", ["--backbone", "stack_lstm", "--lexicon", "none"]),
    "queue-lstm": ("Queue-LSTM", ["--backbone", "queue_lstm", "--lexicon", "none"]),
    "deque-lstm": ("DeQue-LSTM", ["--backbone", "deque_lstm", "--lexicon", "none"]),
    # the preset's recipe with the bottom end's pushes started small (σ(-3) ≈ 0.05): the DeQue starts out as a queue
    "deque-lstm-queue-start": ("DeQue-LSTM, bottom pushes started small",
                               ["--backbone", "deque_lstm", "--lexicon", "none", "--memory_bottom_push_bias", "-3"]),
    # the preset's recipe at the paper's controller and memory width (256 where the preset has 64)
    "stack-lstm-paper-width": ("Stack-LSTM, the paper's width (256)",
                               ["--backbone", "stack_lstm", "--lexicon", "none", *PAPER_WIDTH]),
    "deque-lstm-paper-width": ("DeQue-LSTM, the paper's width (256)",
                               ["--backbone", "deque_lstm", "--lexicon", "none", *PAPER_WIDTH]),
    # the same with pushes started above the pops (σ(1) ≈ 0.73 against σ(-1) ≈ 0.27)
    "stack-lstm-paper-width-push-start": ("Stack-LSTM, the paper's width (256), pushes started above pops",
                                          ["--backbone", "stack_lstm", "--lexicon", "none", *PAPER_WIDTH,
                                           "--memory_push_bias", "1"]),
    "deque-lstm-paper-width-push-start": ("DeQue-LSTM, the paper's width (256), pushes started above pops",
                                          ["--backbone", "deque_lstm", "--lexicon", "none", *PAPER_WIDTH,
                                           "--memory_push_bias", "1"]),
    # the DeQue's top end with the push start and its bottom end with the queue start
    "deque-lstm-paper-width-two-end-start": ("DeQue-LSTM, the paper's width (256), top pushes started above pops, "
                                             "bottom pushes started small",
                                             ["--backbone", "deque_lstm", "--lexicon", "none", *PAPER_WIDTH,
                                              "--memory_push_bias", "1", "--memory_bottom_push_bias", "-3"]),
    # the same with the bottom pushes started between small and the pops' level (σ(-2) ≈ 0.12 against σ(-1) ≈ 0.27)
    "deque-lstm-paper-width-mid-bottom-start": ("DeQue-LSTM, the paper's width (256), top pushes started above pops, "
                                                "bottom pushes started below pops",
                                                ["--backbone", "deque_lstm", "--lexicon", "none", *PAPER_WIDTH,
                                                 "--memory_push_bias", "1", "--memory_bottom_push_bias", "-2"]),
    # the same with the bottom pushes started between the two starts above (σ(-2.5) ≈ 0.076)
    "deque-lstm-paper-width-low-bottom-start": ("DeQue-LSTM, the paper's width (256), top pushes started above pops, "
                                                "bottom pushes started between small and below pops",
                                                ["--backbone", "deque_lstm", "--lexicon", "none", *PAPER_WIDTH,
                                                 "--memory_push_bias", "1", "--memory_bottom_push_bias", "-2.5"]),
    # the same with the bottom pushes started halfway in bias between the low and the mid starts (σ(-2.25) ≈ 0.095)
    "deque-lstm-paper-width-mid-low-bottom-start": ("DeQue-LSTM, the paper's width (256), top pushes started above "
                                                    "pops, bottom pushes started at σ(-2.25) ≈ 0.095",
                                                    ["--backbone", "deque_lstm", "--lexicon", "none", *PAPER_WIDTH,
                                                     "--memory_push_bias", "1", "--memory_bottom_push_bias",
                                                     "-2.25"]),
}
# the rows of the headline cells at the top of the paper's learning-rate grid (its presets: 1e-3), and trained with the
# paper's optimiser (RMSProp, batch 10) and the preset's sequence budget, the target side still with LSTM weights of
# its own
for base in ("stack-lstm-paper-width-push-start", "deque-lstm-paper-width-low-bottom-start"):
    label, flags = MEMORY_ROWS[base]
    MEMORY_ROWS[f"{base}-lr-5e-3"] = (f"{label}, learning rate 5e-3", [*flags, "--learning_rate", "5e-3"])
PAPER_OPTIMISER_STARTS = ("deep-lstm", "queue-lstm", "stack-lstm-paper-width-push-start",
                          "deque-lstm-paper-width-low-bottom-start")
for base in PAPER_OPTIMISER_STARTS:
    label, flags = MEMORY_ROWS[base]
    MEMORY_ROWS[f"{base}-rmsprop"] = (f"{label}, RMSProp at batch 10", [*flags, *PAPER_OPTIMISER])
# the DeQue's start one step down the paper's learning-rate grid
base = "deque-lstm-paper-width-low-bottom-start"
label, flags = MEMORY_ROWS[f"{base}-rmsprop"]
MEMORY_ROWS[f"{base}-rmsprop-lr-5e-4"] = (f"{label}, learning rate 5e-4", [*flags, "--learning_rate", "5e-4"])
# and with one half of the paper's optimiser at a time: RMSProp at the preset's batch of 50, Adam at the paper's 10
label, flags = MEMORY_ROWS[base]
MEMORY_ROWS[f"{base}-rmsprop-batch-50"] = (f"{label}, RMSProp at batch 50", [*flags, "--optim", "rmsprop"])
MEMORY_ROWS[f"{base}-batch-10"] = (f"{label}, Adam at batch 10",
                                   [*flags, "--per_device_train_batch_size", "10", "--max_steps", "30000"])
# with momentum 0.9 on the normalised gradient, as the Neural Turing Machine (Graves et al. 2014) was trained (this
# paper names RMSProp without its settings), at the paper's grid rate 1e-4: about Adam's step at 1e-3
for base in PAPER_OPTIMISER_STARTS:
    label, flags = MEMORY_ROWS[f"{base}-rmsprop"]
    MEMORY_ROWS[f"{base}-rmsprop-momentum-lr-1e-4"] = (f"{label}, momentum 0.9, learning rate 1e-4",
                                                       [*flags, "--optim_args", "momentum=0.9", "--learning_rate",
                                                        "1e-4"])
# the same with the squared gradient's average decaying as Adam's second moment does (0.999 where RMSProp has 0.99)
for base in PAPER_OPTIMISER_STARTS:
    label, flags = MEMORY_ROWS[f"{base}-rmsprop"]
    MEMORY_ROWS[f"{base}-rmsprop-momentum-alpha-0.999-lr-1e-4"] = (
        f"{label}, momentum 0.9, squared-gradient decay 0.999, learning rate 1e-4",
        [*flags, "--optim_args", "momentum=0.9,alpha=0.999", "--learning_rate", "1e-4"])
# and with the learning rate warmed up linearly over the first 1,000 updates: RMSProp has no bias correction, so its
# first steps divide by an average of few squared gradients, about 1/√(1 - 0.999ᵗ) times (31 at the first) the
# step Adam takes
for base in PAPER_OPTIMISER_STARTS:
    label, flags = MEMORY_ROWS[f"{base}-rmsprop-momentum-alpha-0.999-lr-1e-4"]
    MEMORY_ROWS[f"{base}-rmsprop-momentum-alpha-0.999-warmup-1000-lr-1e-4"] = (
        f"{label}, 1,000 warm-up updates",
        [*flags, "--lr_scheduler_type", "constant_with_warmup", "--warmup_steps", "1000"])
ROWS.update(MEMORY_ROWS)
# a row with a recipe of its own ("<model>-lstm-<variant>") → the paper's row it answers ("<model>-lstm")
VARIANT_OF = {row: row[:row.index("-lstm-") + len("-lstm")] for row in MEMORY_ROWS if "-lstm-" in row}
# Table 3 of Grefenstette et al. (2015), as the specification quotes it: ((train coarse, fine), (test coarse, fine));
# its deep-LSTM column is the best of 1, 2, 4 and 8 layers, named here.
PAPER_TABLE_3 = {
    "copy": {"deep-lstm": ((.98, .98), (.01, .50), "4 layers"), "stack-lstm": ((.89, .94), (.00, .22)),
             "queue-lstm": ((1.00, 1.00), (1.00, 1.00)), "deque-lstm": ((1.00, 1.00), (1.00, 1.00))},
    "reversal": {"deep-lstm": ((.95, .98), (.04, .13), "8 layers"), "stack-lstm": ((1.00, 1.00), (1.00, 1.00)),
                 "queue-lstm": ((.44, .61), (.00, .07)), "deque-lstm": ((1.00, 1.00), (1.00, 1.00))},
    "bigram-flip": {"deep-lstm": ((.54, .93), (.02, .52), "2 layers"), "stack-lstm": ((.44, .90), (.00, .48)),
                    "queue-lstm": ((.55, .94), (.55, .98)), "deque-lstm": ((.55, .94), (.53, .98))},
    "svo-sov": {"deep-lstm": ((.98, .99), (.98, .99), "8 layers"), "stack-lstm": ((1.00, 1.00), (1.00, 1.00)),
                "queue-lstm": ((1.00, 1.00), (1.00, 1.00)), "deque-lstm": ((1.00, 1.00), (1.00, 1.00))},
    "gender-conjugation": {"deep-lstm": ((.98, .99), (.99, .99), "8 layers"), "stack-lstm": ((.93, .97), (.93, .97)),
                           "queue-lstm": ((1.00, 1.00), (1.00, 1.00)), "deque-lstm": ((1.00, 1.00), (1.00, 1.00))},
}
TRANSDUCTION_TITLES = {"copy": "copy", "reversal": "reversal", "bigram-flip": "bigram flip", "svo-sov": "SVO→SOV",
                       "gender-conjugation": "gender conjugation"}
# The paper's numbers (Akyürek & Andreas 2021, Tables 2, 4, 5), as stated in the project's issues: (mean, std).
# SyntAtt: the paper's re-run of Russin et al.'s code (its Table 2; results/syntactic_attention.md has v1's own).
PAPER = {
    "colors": {"lstm": (0.00, 0.00), "simple": (0.79, 0.02), "pmi": (0.41, 0.19), "ibm2": (0.79, 0.02),
               "bayesian": (0.51, 0.21), "syntatt": (0.57, 0.26), "geca": (0.41, 0.11)},
    "scan-jump": {"lstm": (0.00, 0.00), "simple": (0.92, 0.17), "pmi": (0.95, 0.08), "ibm2": (0.79, 0.27),
                  "bayesian": (0.82, 0.21), "syntatt": (0.57, 0.38), "geca": (1.00, 0.00)},
    "scan-around-right": {"lstm": (0.09, 0.05), "simple": (0.95, 0.01), "pmi": (0.02, 0.04), "ibm2": (0.00, 0.00),
                          "bayesian": (0.02, 0.04), "syntatt": (0.28, 0.26), "geca": (0.98, 0.02)},
    "cogs": {"lstm": (0.51, 0.05), "copy": (0.66, 0.03), "simple": (0.82, 0.01), "pmi": (0.82, 0.00),
             "ibm2": (0.82, 0.00), "bayesian": (0.70, 0.04), "uniform": (0.56, 0.07), "simple-soft": (0.83, 0.00),
             "simple-soft-learned": (0.83, 0.01), "syntatt": (0.15, 0.14), "geca": (0.48, 0.05)},
    "eng-cmn": {"lstm": (24.18, None), "simple": (24.35, None), "pmi": (24.36, None), "ibm2": (25.49, None),
                "geca": (23.90, None)},
}
# Rows that run another recipe for one of the paper's rows, and that row.
PAPER_ROW = {"ibm2-prior": "ibm2"}
PAPER_ONE_SHOT = {"eng-cmn": {"lstm": 17.47, "simple": 18.46, "pmi": 18.46, "ibm2": 19.62, "geca": 17.94}}
PAPER_RECIPE = "2×512, dropout 0.4, batch 128 × 4, 8,000 updates"
SYNTATT_PAPER_RECIPE = ("Russin et al.'s v1 size, 2 × 200 per direction with 120-wide embeddings, batched: 32 × 6,250 "
                        "updates at a constant 0.001 (the 200,000 pairs of v1's batch-1 run)")
# The reduced rows keep the paper's equations where `paper` uses the paper code's decoder details and source side
# (both measured on SCAN jump: scan_jump_code_options.md, scan_cpu_tier_analysis.md). Colors always runs the paper recipe.
CODE_DETAILS_NOTE = ("keeps the paper's equations where `paper` uses the paper code's decoder details "
                     "([`scan_jump_code_options.md`](scan_jump_code_options.md)) and source side (`<s>` before each "
                     "source, abstaining lexicon rows)")
# Where a row misses the paper, the analysis (linked under the task's table when the file exists).
ANALYSIS = {"colors": "colors_fidelity_experiments.md", "scan-jump": "scan_cpu_tier_analysis.md",
            "scan-around-right": "scan_cpu_tier_analysis.md", "cogs": "cogs_mt_cpu_tier.md",
            "eng-cmn": "cogs_mt_cpu_tier.md"}
# GECA's own paper (Andreas 2020: its learner, a 1-layer biLSTM encoder with attention and copying, 10 seeds, each
# training example drawn from the composed pairs with probability 0.3): the second reference protocol of the GECA rows
GECA_PAPER = {"scan-jump": (0.87, 0.06), "scan-around-right": (0.82, 0.11)}


def geca_note(task: str, rows: list[tuple[str, dict]]) -> str | None:
    """Under a table with GECA rows (`rows`: (row name, row file) pairs): how each mixed the composed pairs in, and
    GECA's own paper's number on the split."""
    mixings = []
    for row, results in rows:
        augmentation = results.get("augmentation") or {}
        if augmentation.get("method") != "geca":
            continue
        mixing = (f"each training example drawn from the composed pairs with probability {augmentation['aug_ratio']:g}"
                  if augmentation.get("mixing") == "ratio" else "the composed pairs added to the training data")
        mixings.append(f"{ROWS[row][0]}: {mixing}")
    if not mixings:
        return None
    note = "GECA rows (composed anew for each seed): " + "; ".join(mixings) + "."
    if task in GECA_PAPER:
        note += (" Their paper column is the lexicon paper's (GECA with its LSTM); GECA's own paper reports "
                 f"{fmt(*GECA_PAPER[task], 2)} on this split with its learner (a biLSTM encoder with attention and "
                 "copying, probability 0.3).")
    return note


# Syntactic Attention's own paper (Russin et al. 2019, v1: 5 seeds; around right from a later arXiv version), as the
# specification quotes it: the second reference of the SyntAtt rows, whose seeds vary widely (hence the median).
SYNTATT_PAPER = {"scan-simple": "1.00 ± 0.00", "scan-turn-left": "0.983", "scan-jump": "0.911 ± 0.103 (median 0.985)",
                 "scan-around-right": "0.29 ± 0.35"}


def syntatt_note(task: str, rows: list[tuple[str, dict]]) -> str | None:
    """Under a table with SyntAtt rows: each row's median over its seeds, and Russin et al.'s own number."""
    import statistics

    medians = [f"{ROWS[row][0]} {statistics.median(metric_values(results, TASKS[task][1])):.2f}"
               for row, results in rows if row in ("syntatt", "syntatt-simple")]
    if not medians:
        return None
    note = "Median over seeds: " + "; ".join(medians) + "."
    if task in SYNTATT_PAPER:
        note += f" Russin et al. (2019) report {SYNTATT_PAPER[task]} for Syntactic Attention on this split."
    return note


# Rows whose recipe or protocol has its own document (linked under a task's table that has one of them).
ROW_DOCUMENTS = [({"geca", "geca-simple"}, "geca_rows.md", "GECA rows (the recipe each used and why, per-seed numbers)"),
                 ({"syntatt", "syntatt-simple"}, "syntactic_attention.md", "Syntactic Attention rows and presets")]
TASK_TITLES = {"colors": "Colors (test)", "scan-jump": "SCAN addprim_jump (test)",
               "scan-around-right": "SCAN template_around_right (test)", "scan-simple": "SCAN simple (test)",
               "scan-turn-left": "SCAN addprim_turn_left (test)", "cogs": "COGS",
               "eng-cmn": "English–Chinese (test, BLEU)"}
# What a row's split means next to the paper's number, when they differ.
SPLIT_NOTES = {("cogs", "test"): (
    "**Not comparable with the paper's column**: ours is COGS *test* (in-distribution) exact match, the paper's is "
    "*gen* (the compositional generalization split). gen.tsv is not in this machine's data mirror, so no gen number "
    "was measured; the gen report (per category) runs unchanged wherever gen.tsv is present.")}


def reduced_note(results: dict) -> str:
    """What a `cpu` row reduced, read from the settings its row file recorded."""
    model, training = results["model"], results["training"]
    batch = training["per_device_train_batch_size"]
    accumulation = training.get("gradient_accumulation_steps") or 1
    batch_text = f"{batch}" + (f" × {accumulation}" if accumulation > 1 else "")
    # Row files written before the sampler was recorded all ran the cpu preset, which groups batches by length.
    if training.get("train_sampling_strategy", "group_by_length") == "group_by_length":
        by_target = results.get("group_by_target_length", False)  # absent from rows written before the flag existed
        batch_text += " (grouped by source + target length)" if by_target else " (grouped by source length)"
    selection = ("checkpoint chosen on validation exact match" if results.get("selection") == "validation"
                 else "final weights")
    rate = ("a constant learning rate" if training.get("lr_scheduler_type") == "constant" else "a peak learning rate")
    if model["backbone"] == "syntactic_attention":
        return (f"Syntactic Attention rows with preset `cpu` are reduced: syntactic biLSTM {model['num_layers']} × "
                f"{model['hidden_size']} per direction with {model['embedding_size']}-wide semantic embeddings, dropout "
                f"{model['dropout']}, batch {batch_text}, {training['max_steps']:,} updates at {rate} of "
                f"{training['learning_rate']:g}, {selection} — its `paper` preset is {SYNTATT_PAPER_RECIPE} "
                "([`syntactic_attention.md`](syntactic_attention.md)). Both decode greedily.")
    return (f"Rows with preset `cpu` are reduced: {model['num_layers']}×{model['hidden_size']} {model['backbone'].upper()} "
            f"with {model['embedding_size']}-wide embeddings, dropout {model['dropout']}, batch {batch_text}, "
            f"{training['max_steps']:,} updates at a peak learning rate of {training['learning_rate']:g}, {selection} "
            f"— the paper's preset is {PAPER_RECIPE} — and {CODE_DETAILS_NOTE}{code_output_note(results)}. "
            "Both decode greedily.")


def code_output_note(results: dict) -> str:
    """The clause for the paper code's output layer, where the `paper` preset of the row's benchmark uses it."""
    if (row_preset_values(results, "paper") or {}).get("mixture_normalization") != "code":
        return ""
    return (", and the equations' output layer where `paper` uses the code's (`mixture_normalization`, "
            "`probability_floor`: [`gpu_fast_step.md`](gpu_fast_step.md))")


def row_batch(training: dict) -> str:
    return f"{training['per_device_train_batch_size']}" + (
        f" × {training['gradient_accumulation_steps']}" if (training.get("gradient_accumulation_steps") or 1) > 1 else "")


def stopped_note(results: dict, label: str) -> str | None:
    """What a row cut short by `--max_train_minutes` ran, read from its row file; None when every seed finished."""
    updates = results.get("train_updates")  # absent from rows written before seeds recorded their updates
    training = results.get("training", {})
    if not updates or updates["min"] >= training["max_steps"]:
        return None
    if not stopped_by_time_limit(results) and (results.get("settings", {}).get("stop_at_train_loss")
                                               or stopped_by_hand(results)):
        return None  # trained to convergence (the recipe, not a reduced run), or stopped by hand (`hand_stopped_note`)
    reached = f"{updates['min']:,}" + (f"–{updates['max']:,}" if updates["max"] != updates["min"] else "")
    tf32 = " and TF32 matrix products" if re.search(r"--tf32[ =]true", results.get("command", "")) else ""
    return (f"The row “{label}” is reduced: its seeds ran preset `{results['preset']}` on "
            f"{machine_cell(results)} with batch {row_batch(training)}{tf32} and were stopped by a "
            f"{results['settings']['max_train_minutes']:g}-minute training limit (`--max_train_minutes`) after {reached} "
            f"of the recipe's {training['max_steps']:,} updates, with the learning rate still warming up "
            f"({int(training['warmup_steps']):,} warm-up updates); "
            + ("the checkpoint was chosen on validation among those reached." if results.get("selection") == "validation"
               else "the weights reached were evaluated."))


def hand_stopped_note(results: dict, label: str) -> str | None:
    """Which seeds of a row were stopped by hand (a `STOP` file in the seed's folder) and after how many updates;
    None when none was."""
    seeds = stopped_by_hand(results)
    if not seeds:
        return None

    def listed(items):  # "a", "a and b", "a, b and c"
        return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"

    updates = listed([f"{results['per_seed'][seed]['train_seconds']['updates']:,}" for seed in seeds])
    which = f"seed {seeds[0]} was" if len(seeds) == 1 else f"seeds {listed(seeds)} were"
    cap = results.get("training", {}).get("max_steps")
    of_cap = f" of the recipe's {cap:,}" if cap else ""
    return (f"In the row “{label}”, {which} stopped by hand after {updates}{of_cap} updates: "
            f"{'its' if len(seeds) == 1 else 'their'} numbers are those of the weights reached, not of a finished "
            f"seed.")


def examples_per_update(training: dict) -> int:
    return training["per_device_train_batch_size"] * (training.get("gradient_accumulation_steps") or 1)


def row_preset_values(results: dict, preset: str | None = None, lexicon: str | None = None) -> dict | None:
    """The flag values that `preset` (default: the row's own) gives the row's backbone and benchmark, without the
    lexical mixture's settings when `lexicon` is "none"; None when the preset is unknown here."""
    from lexical_hf.training.arguments import preset_defaults

    try:
        _, values = preset_defaults(results.get("model", {}).get("backbone", "lstm"), preset or results["preset"],
                                    results.get("benchmark"), results.get("benchmark_config"), lexicon=lexicon)
    except (KeyError, ValueError):
        return None
    return values


def recipe_training(results: dict) -> dict | None:
    """The flag values that the row's preset gives its benchmark; None when the preset is unknown here."""
    values = row_preset_values(results)
    return values if values and "per_device_train_batch_size" in values else None


def preset_changes(results: dict) -> dict[str, tuple]:
    """Model settings that the row's preset gives its benchmark now and the row ran otherwise, {name: (ran, now)}; a
    setting the row's command gave as a flag was the row's own choice and is not compared."""
    import dataclasses

    from lexical_hf import LexicalSeq2SeqConfig
    from lexical_hf.training.arguments import OPTIONAL_MODEL_FIELDS, ModelArguments

    model = results.get("model")
    values = row_preset_values(results, lexicon=results.get("lexicon")) if model else None
    if not values:  # a row file that did not record its model, or a preset unknown here
        return {}
    names = {field.name for field in dataclasses.fields(ModelArguments)}
    command = results.get("command", "")
    changes = {}
    for name, now in values.items():
        if name not in names or re.search(rf"--{name}[ =]", command):
            continue  # not a model setting, or the row's own flag
        if model.get(name) is not None:
            ran = model[name]
        elif name in OPTIONAL_MODEL_FIELDS:  # None, or a row written before the setting existed: the model's default
            ran = getattr(LexicalSeq2SeqConfig, name)
        else:
            continue
        if ran != now:
            changes[name] = (ran, now)
    return changes


def preset_note(results: dict, label: str) -> str | None:
    """A row whose preset has changed a model setting since it ran; None otherwise."""
    changes = preset_changes(results)
    if not changes:
        return None
    listed = ", ".join(f"`{name}` {ran} (now {now})" for name, (ran, now) in changes.items())
    return f"The row “{label}” ran preset `{results['preset']}` as it was then: {listed}."


def device_note(results: dict, label: str) -> str | None:
    """How a row that did all its updates on a GPU ran them (batch layout, TF32, the captured step); None for other
    rows."""
    updates, training = results.get("train_updates"), results.get("training", {})
    if "cuda" not in results.get("machine", "").lower() and "nvidia" not in results.get("machine", "").lower():
        return None
    if not updates or updates["min"] < training.get("max_steps", 0):
        return None  # stopped short: `stopped_note` says what it ran
    command = results.get("command", "")
    how = [f"batch {row_batch(training)}"]
    recipe = recipe_training(results)
    if recipe and row_batch(recipe) != row_batch(training):
        same = examples_per_update(recipe) == examples_per_update(training)
        how[0] += f" (the recipe's {row_batch(recipe)}{' as one batch' if same else ''})"
    how += ["TF32 matrix products"] if re.search(r"--tf32[ =]true", command) else []
    how += ["the captured training step (`--cuda_graphs true`)"] if re.search(r"--cuda_graphs[ =]true", command) else []
    return (f"The row “{label}” ran preset `{results['preset']}` on {machine_cell(results)} with "
            f"{', '.join(how[:-1]) + ' and ' + how[-1] if len(how) > 1 else how[0]}, all "
            f"{training['max_steps']:,} updates; "
            + ("the checkpoint was chosen on validation." if results.get("selection") == "validation"
               else "the final weights were evaluated."))


# results/<folder>/ of each task: the issues name the English–Chinese rows results/mt/*.json
RESULT_FOLDERS = {"eng-cmn": "mt", **{task: f"transduction/{task}" for task in TRANSDUCTION_TASKS}}


def task_folder(task: str) -> str:
    return RESULT_FOLDERS.get(task, task)


TIERS = ("cpu", "paper")


def row_file(task: str, row: str, tier: str) -> Path:
    suffix = "" if tier == "cpu" or task == "colors" else f".{tier}"
    return RESULTS / task_folder(task) / f"{row}{suffix}.json"


def row_and_tier(path: Path) -> tuple[str, str]:
    """A row file's row and tier (`row_file`'s inverse): "" for the `cpu` tier, whose files have no suffix. Row names
    may hold dots (a decay of 0.999)."""
    row, _, tier = path.stem.rpartition(".")
    return (row, tier) if tier in TIERS else (path.stem, "")


def row_label(path: Path) -> str:
    """A row file's label in the tables: its row's name, and its tier where it is not the `cpu` tier."""
    row, tier = row_and_tier(path)
    return ROWS[row][0] + (f" ({tier} tier)" if tier else "")


def folder_name(task: str, row: str, tier: str) -> str:
    return f"lexical-{task}-{row}" + ("" if tier == "cpu" or task == "colors" else f"-{tier}")


def run_row(args) -> Path:
    """Train the row's seeds and write its row file and Hub-ready folder.

    With `--extend` and an existing row file, the new seeds train in a scratch folder beside the row's
    (`<folder>.extend`) and are merged into the row only if they are new seeds of the same settings (`extend_row`);
    the row's folder then gets the new seeds' folders, its first seed's weights when that seed is a new one, and the
    merged results and card. A refused extension leaves the row file and the row's folder as they were. `--rerun`
    does the same with seeds already in the row (`rerun_row`), whose earlier entries the row file keeps as superseded."""
    from lexical_hf.files import replace_atomically
    from lexical_hf.results import parse_seeds

    task_args, _, default_seeds = TASKS[args.task]
    _, row_args = ROWS[args.row]
    seeds = args.seeds or default_seeds[args.tier]
    row_dir = Path(args.output_root) / folder_name(args.task, args.row, args.tier)
    target = row_file(args.task, args.row, args.tier)
    extending = (args.extend and target.exists()) or args.rerun is not None
    if extending:  # say it before hours of training
        where = os.path.relpath(target, REPO)
        if not target.exists():
            raise SystemExit(f"--rerun: there is no row file {where} to run seeds again in")
        row = json.loads(target.read_text())
        asked = set(parse_seeds(seeds))
        if args.extend and asked & set(row["seeds"]):
            raise SystemExit(f"--extend: seeds {sorted(asked & set(row['seeds']))} are already in {where}")
        if args.rerun is not None:
            try:
                check_rerun(row, {str(seed) for seed in asked}, args.rerun)
            except ValueError as error:
                raise SystemExit(f"{error} ({where})")
    output_dir = row_dir.with_name(row_dir.name + ".extend") if extending else row_dir
    command = [sys.executable, str(REPO / "examples" / "run_lexical.py"), *task_args, *row_args,
               "--preset", "paper" if args.task == "colors" else args.tier, "--seeds", seeds,
               "--parallel_seeds", str(args.parallel_seeds), "--output_dir", str(output_dir),
               "--disable_tqdm", "true", *args.extra]
    if args.data_dir:
        command += ["--data_dir", args.data_dir]
    print("+", " ".join(command), flush=True)
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    subprocess.run(command, check=True, env=env, cwd=REPO)
    target.parent.mkdir(parents=True, exist_ok=True)
    results = json.loads((output_dir / "results.json").read_text())
    results["reproduce_command"] = " ".join(["python", "benchmarks/reproduce.py", *sys.argv[1:]])
    if extending:  # raises before anything of the row changes
        earlier = json.loads(target.read_text())
        results = rerun_row(earlier, results, args.rerun) if args.rerun is not None else extend_row(earlier, results)
        merge_into_row_folder(output_dir, row_dir, results)
    replace_atomically(target, json.dumps(results, indent=1) + "\n")
    print(f"wrote {os.path.relpath(target, REPO)} and {row_dir}")
    return target


def merge_into_row_folder(extension_dir: Path, row_dir: Path, merged: dict) -> None:
    """After `--extend`: move the new seeds' folders into the row's folder; publish the new run's weights there when
    the merged row's first seed is one of its seeds; write the merged results and their card."""
    from lexical_hf.lexicon import Lexicon
    from lexical_hf.model_card import build_model_card
    from lexical_hf.files import replace_atomically
    from lexical_hf.results import run_markdown

    new_seeds = json.loads((extension_dir / "results.json").read_text())["seeds"]
    if merged["seeds"][0] in new_seeds or not (row_dir / "results.json").exists():
        if merged["seeds"][0] not in new_seeds:  # the row's first seed was trained elsewhere and its weights are not here
            print(f"{row_dir} is missing: it stays so (`--publish` rebuilds it from the row file); the new seeds are in "
                  f"{extension_dir}")
            return
        row_dir.mkdir(parents=True, exist_ok=True)
        for item in extension_dir.iterdir():  # the new first seed's weights, tokenizer and lexicon
            if item.is_file() and not item.name.startswith("."):
                replace_atomically(row_dir / item.name, copy_from=item)
    for seed in new_seeds:
        source, destination = extension_dir / "seeds" / f"seed-{seed}", row_dir / "seeds" / f"seed-{seed}"
        if source.is_dir():
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(destination, ignore_errors=True)
            shutil.move(str(source), str(destination))
    lexicon = Lexicon.from_pretrained(row_dir) if (row_dir / "lexicon.json").exists() else None
    folder_results = {key: value for key, value in merged.items() if key != "reproduce_command"}
    replace_atomically(row_dir / "results.json", json.dumps(folder_results, indent=2, default=str) + "\n")
    replace_atomically(row_dir / "results.md", run_markdown(folder_results))
    replace_atomically(row_dir / "README.md", str(build_model_card(folder_results, lexicon)))
    shutil.rmtree(extension_dir)


def with_flag(argv: list[str], flag: str, value: str | None) -> list[str]:
    """`argv` with `flag`'s value replaced by `value` (appended if absent; removed, with its value, if None)."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == flag:
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out if value is None else out + [flag, value]


def recorded_flags(command: list[str]) -> list[str]:
    """The training flags of a row's recorded command (`python examples/run_lexical.py …`, `lexical-hf train …` or
    `python -m lexical_hf.training …`)."""
    for k, word in enumerate(command):
        if word.endswith("run_lexical.py") or word == "lexical_hf.training" or (word == "train" and k and command[k - 1].endswith("lexical-hf")):
            return command[k + 1:]
    raise SystemExit(f"the row's command {' '.join(command)!r} names no training entry point")


def publish_row(args) -> int:
    """`--publish`: train the row file's first seed again into the row's folder and compare its metrics with the row's."""
    import shlex

    target = row_file(args.task, args.row, args.tier)
    shown = os.path.relpath(target, REPO)
    if not target.exists():
        raise SystemExit(f"--publish: {shown} does not exist; run the row first (without --publish)")
    row = json.loads(target.read_text())
    seed = str(row["seeds"][0])
    stopped = row["per_seed"][seed].get("train_seconds", {})
    if stopped.get("stopped_by_time_limit"):  # say it before training, not after a run that cannot agree
        raise SystemExit(f"--publish: seed {seed} of {shown} was stopped by a wall-clock limit after "
                         f"{stopped['updates']:,} updates: how far a retrained seed gets depends on the machine, so "
                         "its metrics cannot be checked against the row's")
    if stopped.get("stopped_by_request"):
        raise SystemExit(f"--publish: seed {seed} of {shown} was stopped by hand after {stopped['updates']:,} "
                         "updates: a retrained seed would not stop there, so its metrics cannot be checked against "
                         "the row's")
    recorded_command = shlex.split(row["command"])
    argv = recorded_flags(recorded_command)
    output_dir = Path(args.output_root) / folder_name(args.task, args.row, args.tier)
    for flag, value in (("--seeds", seed), ("--parallel_seeds", None), ("--resume_from_checkpoint", None),
                        ("--output_dir", str(output_dir)), ("--data_dir", args.data_dir),
                        ("--overwrite_output_dir", "true")):  # the folder is rebuilt from the row, by design
        argv = with_flag(argv, flag, value)
    command = [sys.executable, str(REPO / "examples" / "run_lexical.py"), *argv, *args.extra]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    threads = recorded_threads(row.get("machine", ""))
    if threads:  # float sums depend on how a CPU matmul is split across threads: train as the row's seed was
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
        print(f"with {threads} torch thread(s), as the row's first run", flush=True)
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, env=env, cwd=REPO)
    measured = json.loads((output_dir / "results.json").read_text())["per_seed"][seed]
    print(f"{shown}, seed {seed}: the row's record against the run now")
    worst = largest_difference(row["per_seed"][seed], measured, args.tolerance)
    verdict = "reproduced" if worst <= args.tolerance else "NOT reproduced"
    print(f"{verdict}: largest difference {worst:.2e} (tolerance {args.tolerance:g}); folder {output_dir}")
    return 0 if worst <= args.tolerance else 1


def recorded_threads(machine: str) -> int | None:
    """The torch threads per seed of a row's first run on a CPU, from its `machine` field ("CPU (2 cores, 1 torch
    thread(s) per run, …); …", runs joined by " | "); None for a GPU run or a field that does not say."""
    found = re.match(r"CPU \(\d+ cores, (\d+) torch thread\(s\) per run", machine.split(" | ")[0])
    return int(found.group(1)) if found else None


def largest_difference(recorded: dict, measured: dict, tolerance: float) -> float:
    """Print every numeric metric of one seed, recorded against measured, and return the largest difference; a metric
    missing from `measured`, or NaN on either side, is an infinite difference (it never agrees)."""
    from lexical_hf.results import SEED_RECORDS, flatten

    worst = 0.0
    for split, metrics in recorded.items():
        if split in SEED_RECORDS:
            continue
        now = flatten(measured.get(split, {}))
        for name, value in flatten(metrics).items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            difference = abs(now[name] - value) if isinstance(now.get(name), (int, float)) else float("inf")
            if math.isnan(difference):  # max() would drop a NaN
                difference = float("inf")
            worst = max(worst, difference)
            mark = "" if difference <= tolerance else "  <-- differs"
            print(f"  {split}/{name:<40} {value:>12.6f} {now.get(name, float('nan')):>12.6f} {difference:>10.2e}{mark}")
    return worst


# What must agree for two runs to be seeds of one row: everything but the seeds, the output folder and the machine.
SAME_ROW_KEYS = ("preset", "selection", "benchmark", "benchmark_config", "lexicon", "lexicon_path", "lexicon_temperature",
                 "lexicon_fallback", "lexicon_tie_breaks", "source_bos", "group_by_target_length", "model", "training",
                 "lexical_hf_version")


def row_setting(row: dict, key: str):
    """`row[key]`; row files written before `lexicon_fallback`, `source_bos` and `group_by_target_length` were
    recorded used the defaults, and so did those written before a model argument existed (None: the default).
    Those written before `lexicon_tie_breaks` broke every tie by string, which is what None records."""
    if key == "model":
        return {name: value for name, value in (row.get("model") or {}).items() if value is not None}
    if key == "lexicon_fallback" and key not in row:
        return {"none": None, "uniform": "uniform"}.get(row.get("lexicon"), "mutual_exclusivity")
    if key in ("source_bos", "group_by_target_length"):
        return bool(row.get(key, False))
    return row.get(key)


def stopped_by_time_limit(row: dict) -> bool:
    """Whether `--max_train_minutes` ended some seed of a row file before its last update."""
    return any(seed.get("train_seconds", {}).get("stopped_by_time_limit") for seed in row["per_seed"].values())


def stopped_by_hand(row: dict) -> list[str]:
    """The seeds of a row file that a `STOP` file ended before their last update, in the row's order."""
    return [seed for seed, metrics in row["per_seed"].items()
            if metrics.get("train_seconds", {}).get("stopped_by_request")]


RUN_KEYS = ("command", "reproduce_command", "seeds", "machine", "source_revision")  # one run's record in a row file


def check_same_settings(earlier: dict, new: dict, flag: str) -> None:
    """Raises `ValueError` when two runs of a row differ in anything but seeds, machine and a time limit that stopped
    no seed."""
    from lexical_hf.results import settings_differences

    differing = [key for key in SAME_ROW_KEYS if row_setting(earlier, key) != row_setting(new, key)]
    if earlier.get("settings") and new.get("settings"):  # recorded since 2026-11-25: everything the seeds depend on
        # a training time limit that stopped no seed of either run changed nothing they did
        unused_limit = not any(stopped_by_time_limit(row) for row in (earlier, new))
        differing += settings_differences(earlier["settings"], new["settings"],
                                          ignore=("max_train_minutes",) if unused_limit else ())
    if differing:
        raise ValueError(f"{flag}: the existing row file was run with other settings ({', '.join(differing)}); "
                         "rerun every seed instead")


def extend_row(earlier: dict, new: dict) -> dict:
    """The row file of `earlier`'s seeds plus `new`'s (`--extend`): per-seed metrics merged, summary recomputed.

    Raises `ValueError` when the two runs differ in anything but seeds, machine and a time limit that stopped no seed,
    or share a seed."""
    from lexical_hf.results import summarize_row

    check_same_settings(earlier, new, "--extend")
    shared = set(earlier["per_seed"]) & set(new["per_seed"])
    if shared:
        raise ValueError(f"--extend: seeds {sorted(shared, key=int)} are already in the row file")
    per_seed = {**earlier["per_seed"], **new["per_seed"]}
    per_seed = {seed: per_seed[seed] for seed in sorted(per_seed, key=int)}
    runs = earlier.get("runs") or [{key: earlier.get(key) for key in RUN_KEYS}]
    runs = runs + [{key: new.get(key) for key in RUN_KEYS}]
    merged = {**new, "run_name": earlier.get("run_name", new.get("run_name")), "seeds": [int(seed) for seed in per_seed],
              "per_seed": per_seed, "runs": runs}
    if earlier.get("superseded_seeds"):  # seeds run again earlier (`--rerun`): their replaced entries stay on record
        merged["superseded_seeds"] = earlier["superseded_seeds"]
    # every machine and every code revision that trained some of the seeds, in order
    merged["machine"] = " | ".join(dict.fromkeys(run["machine"] for run in runs if run.get("machine")))
    revisions = dict.fromkeys(run.get("source_revision") for run in runs)
    merged["source_revision"] = " | ".join(r or "unrecorded" for r in revisions) if len(revisions) > 1 else new.get("source_revision")
    merged.update(summarize_row(per_seed))
    return merged


def check_rerun(row: dict, seeds: set[str], why: str) -> None:
    """Raises `ValueError` unless `seeds` of the row file `row` may be run again for the reason `why`."""
    if not why.strip():
        raise ValueError("--rerun: say why the seeds are run again; the reason is kept beside the entries replaced")
    missing = seeds - set(row["per_seed"])
    if missing:
        raise ValueError(f"--rerun: seeds {sorted(map(int, missing))} are not in the row file (--extend adds new seeds)")
    again = seeds & set(row.get("superseded_seeds") or {})
    if again:
        raise ValueError(f"--rerun: seeds {sorted(map(int, again))} were run again before; their first entries are "
                         "under superseded_seeds, and a row file keeps one replaced entry per seed")


def rerun_row(earlier: dict, new: dict, why: str) -> dict:
    """The row file of `earlier` with the seeds of `new` run again (`--rerun`): each rerun seed's entry replaces the
    earlier one, which moves to `superseded_seeds` with `why` and the record of the run that trained it.

    Raises `ValueError` when `why` is empty, when the runs differ in settings (as `extend_row`), when a seed of `new`
    is not in the row file, or when it was run again before."""
    rerun = set(new["per_seed"])
    check_rerun(earlier, rerun, why)
    check_same_settings(earlier, new, "--rerun")
    runs = earlier.get("runs") or [{key: earlier.get(key) for key in RUN_KEYS}]
    superseded = dict(earlier.get("superseded_seeds") or {})
    for seed in rerun:
        run = next((run for run in runs if int(seed) in (run.get("seeds") or [])), {})
        superseded[seed] = {**earlier["per_seed"][seed], "why": why,
                            **{key: run[key] for key in ("command", "machine", "source_revision") if run.get(key)}}
    runs = [{**run, "seeds": [s for s in run.get("seeds") or [] if str(s) not in rerun]} for run in runs]
    kept_seeds = {s: m for s, m in earlier["per_seed"].items() if s not in rerun}
    kept = {**earlier, "per_seed": kept_seeds, "seeds": [int(s) for s in kept_seeds],
            "runs": [run for run in runs if run["seeds"]]}
    if kept["per_seed"]:
        merged = extend_row(kept, new)
    else:  # every seed of the row was run again: the new run is the whole row
        merged = {**new, "run_name": earlier.get("run_name", new.get("run_name")),
                  "runs": [{key: new.get(key) for key in RUN_KEYS}]}
    merged["superseded_seeds"] = {seed: superseded[seed] for seed in sorted(superseded, key=int)}
    return merged


# ---------------------------------------------------------------------------------------------------- summary
def reported_split(results: dict) -> str:
    """gen for COGS when it was evaluated (the paper's table), else test, else the first evaluated split."""
    for split in ("gen", "test"):
        if split in results["summary"]:
            return split
    return next(iter(results["summary"]))


def metric_values(results: dict, metric: str) -> list[float]:
    split = reported_split(results)
    values = []
    for seed_metrics in results["per_seed"].values():
        value = seed_metrics[split]
        for key in metric.split("."):
            value = value[key]
        values.append(float(value))
    return values


def fmt(mean, std, digits):
    return f"{mean:.{digits}f}" if std is None else f"{mean:.{digits}f} ± {std:.{digits}f}"


def machine_cell(results: dict) -> str:
    """The device part of each machine that ran seeds of the row (" | " between runs on different machines)."""
    return " + ".join(dict.fromkeys(part.split(";")[0].strip() for part in results.get("machine", "?").split(" | ")))


def code_cell(results: dict, unrecorded: str) -> str:
    """One revision per run that trained seeds of the row (" | " in the row file; a pipe would split the cell)."""
    if not results.get("source_revision"):
        return unrecorded
    return ", ".join(f"`{revision}`" for revision in results["source_revision"].split(" | "))


def summarize() -> str:
    import statistics

    lines = ["# Reproduction of Akyürek & Andreas (2021): ours beside the paper", "",
             "Written by `python benchmarks/reproduce.py --summarize` from `results/<task>/<row>.json`; each row file",
             "holds its exact command, seeds, preset, machine and per-seed metrics. Mean ± population std over the",
             "seeds shown. Rows the paper has but we have not run are marked “not run”. Training times are",
             "upper bounds: on the 2-core machine rows often ran beside other jobs (up to four processes).",
             "“code” is the `git describe` of the checkout that wrote the row. Every row ran with the LSTM decoder",
             "of d8e876d or later, which stops each row of a batch at its own target (before, it ran every padded",
             "step: the same model with other float rounding and dropout draws; the analyses keep those numbers).", "",
             "The four learned lexicons on SCAN around_right, side by side (the paper's Figure 3):",
             "[`lexicons_around_right.png`](lexicons_around_right.png), with the notes in",
             "[`lexicons_around_right.md`](lexicons_around_right.md). What the PMI, IBM Model 2 and Bayesian",
             "learners put in L on each task, and why some of their rows equal each other seed for seed:",
             "[`lexicon_rows.md`](lexicon_rows.md).", "",
             "Each row also leaves a Hub-ready folder, `outputs/reproduce/lexical-<task>-<row>/` (not in git), with",
             "its first seed's weights; `lexical-hf evaluate <folder> --data-dir ../shared/data` decodes the test",
             "split again and compares every metric with the row's. A fresh clone has none of these folders:",
             "`python benchmarks/reproduce.py --task <task> --row <row> --publish --data_dir ../shared/data` trains",
             "the row's first seed again with the row file's settings (and, on a CPU, its torch threads per seed)",
             "and checks its metrics against the row's.",
             "The last check of each folder:",
             "[`diagnostics/evaluate_published_folders.txt`](diagnostics/evaluate_published_folders.txt); the three",
             "Simple folders rebuilt that way on a fresh clone (every metric equal to its row's):",
             "[`diagnostics/publish_fresh_clone_transformers_5.24.txt`](diagnostics/publish_fresh_clone_transformers_5.24.txt).",
             ""]
    figures = []
    for task, (_, metric, _) in TASKS.items():
        if task in TRANSDUCTION_TASKS:  # their own table, below
            continue
        folder = RESULTS / task_folder(task)
        files = sorted(folder.glob("*.json"), key=table_order) if folder.is_dir() else []
        row_results = [json.loads(path.read_text()) for path in files]
        if not files and task not in PAPER:
            continue
        digits = 2
        lines += [f"## {TASK_TITLES[task]}", ""]
        if task == "eng-cmn":
            lines += ["| model | ours BLEU full | paper | ours 1-shot | paper | ours sacreBLEU | seeds | preset | "
                      "training time (sum over seeds) | machine | code |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        else:
            lines += ["| model | ours | paper | seeds | preset | training time (sum over seeds) | machine | code |",
                      "|---|---|---|---|---|---|---|---|"]
        done = set()
        strips, run_notes = [], []
        for path, results in zip(files, row_results):
            row = row_and_tier(path)[0]
            values = metric_values(results, metric)
            mean, std = statistics.fmean(values), statistics.pstdev(values)
            paper = PAPER.get(task, {}).get(PAPER_ROW.get(row, row))
            label = row_label(path)
            wall = sum(seed.get("train_seconds", {}).get("value", 0.0) for seed in results["per_seed"].values())
            seeds = results["seeds"]
            seed_text = f"{len(seeds)} ({seeds[0]}–{seeds[-1]})" if seeds == list(range(seeds[0], seeds[-1] + 1)) else str(seeds)
            machine, code = machine_cell(results), code_cell(results, "before d8e876d")
            link = f"[{fmt(mean, std, digits)}]({task_folder(task)}/{path.name})"
            if task == "eng-cmn":
                one_shot = metric_values(results, "bleu_paper_one_shot.score")
                sacre = metric_values(results, "sacrebleu.score")
                lines.append(f"| {label} | {link} | {fmt(*paper, 2) if paper else '—'} | "
                             f"{fmt(statistics.fmean(one_shot), statistics.pstdev(one_shot), 2)} | "
                             f"{PAPER_ONE_SHOT[task].get(PAPER_ROW.get(row, row), '—')} | "
                             f"{fmt(statistics.fmean(sacre), statistics.pstdev(sacre), 2)} | {seed_text} | "
                             f"`{results['preset']}` | {wall / 60:.0f} min | {machine} | {code} |")
            else:
                lines.append(f"| {label} | {link} | {fmt(*paper, 2) if paper else '—'} | {seed_text} | "
                             f"`{results['preset']}` | {wall / 60:.0f} min | {machine} | {code} |")
            done.add(row)
            strips.append((label, values, paper[0] if paper else None))
            run_notes += [note] if (note := stopped_note(results, label) or device_note(results, label)) else []
            run_notes += [note] if (note := preset_note(results, label)) else []
            run_notes += [note] if (note := hand_stopped_note(results, label)) else []
        for row, paper in PAPER.get(task, {}).items():
            if row not in done:
                rest = f" — | {PAPER_ONE_SHOT[task][row]} | — | — | — | — | — | — |" if task == "eng-cmn" else " — | — | — | — | — |"
                lines.append(f"| {ROWS[row][0]} | not run | {fmt(*paper, 2)} |{rest}")
        lines.append("")
        splits = {reported_split(results) for results in row_results}
        lines += [SPLIT_NOTES[(task, split)] + "\n" for split in sorted(splits) if (task, split) in SPLIT_NOTES]
        if task == "eng-cmn" and row_results:
            first_seed = next(iter(row_results[0]["per_seed"].values()))
            signature = first_seed[reported_split(row_results[0])]["sacrebleu"]["signature"]
            lines += ["BLEU full / 1-shot: the paper's protocol (corpus BLEU on jieba tokens against every reference of the "
                      f"same English sentence); sacreBLEU: single reference, `{signature}`.", ""]
        cpu_notes = {reduced_note(results) for results in row_results if results.get("preset") == "cpu"}
        lines += [note + "\n" for note in sorted(cpu_notes)]
        lines += [note + "\n" for note in run_notes]
        if task in ANALYSIS and (RESULTS / ANALYSIS[task]).exists():
            lines += [f"Where and why this differs from the paper: [`{ANALYSIS[task]}`]({ANALYSIS[task]}).", ""]
        if (note := geca_note(task, [(row_and_tier(path)[0], results) for path, results in zip(files, row_results)])):
            lines += [note, ""]
        if (note := syntatt_note(task, [(row_and_tier(path)[0], results) for path, results in zip(files, row_results)])):
            lines += [note, ""]
        for rows, document, what in ROW_DOCUMENTS:
            if done & rows and (RESULTS / document).exists():
                lines += [f"{what}: [`{document}`]({document}).", ""]
        if strips:
            figure = draw_strips(task, strips, metric)
            if figure:
                lines += [f"![per-seed {metric} on {task}]({figure.relative_to(RESULTS)})", ""]
                figures.append(figure)
    lines += transduction_section()
    text = "\n".join(lines) + "\n"
    (RESULTS / "README.md").write_text(text)
    return text


def transduction_section() -> list[str]:
    """Grefenstette et al. (2015)'s Table 3 from the row files `results/transduction/<task>/<row>.json`: coarse / fine
    accuracy on the training lengths and the test lengths, ours beside the paper's, each seed's test coarse accuracy
    shown; cells not run yet say so."""
    lines = ["## Transduction with unbounded memory (Grefenstette et al. 2015, Table 3)", "",
             "Coarse / fine accuracy (whole sequence correct / share of each target correct before its first error), "
             "mean ± population std over the seeds; “train” is the builder's validation split (fresh samples of the "
             "training lengths), “test” lengths 65–128. The paper's deep-LSTM cell is its best of 1, 2, 4 and 8 layers. "
             "The paper reports one model per cell, the one of lowest average training perplexity; “ours test, the "
             "paper's pick” applies that rule to our seeds: the test cells of the seed whose last logged training "
             "loss (the mean over its last logging window) is lowest, where every seed recorded it (for seeds run before "
             "it was recorded, as read back from their logs: [`diagnostics/recovered_train_losses.json`]"
             "(diagnostics/recovered_train_losses.json)). Seeds trained to "
             "convergence all stop just under the loss target, so among them the pick is close to arbitrary. "
             "Commands, recipes and what was tried: [`neural_memory.md`](neural_memory.md).", "",
             "| task | model | ours train | paper train | ours test | paper test | test coarse per seed "
             "| ours test, the paper's pick | seeds | preset | training time (sum over seeds; each seed's updates) "
             "| machine | code |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    recipes, notes = set(), []
    for task in TRANSDUCTION_TASKS:
        for row in MEMORY_ROWS:
            paper = PAPER_TABLE_3[task][VARIANT_OF.get(row, row)]
            label = MEMORY_ROWS[row][0] + (f" ({paper[2]})" if len(paper) > 2 else "")
            paper_train, paper_test = (f"{coarse:.2f} / {fine:.2f}" for coarse, fine in paper[:2])
            paths = [path for tier in ("cpu", "paper") if (path := row_file(task, row, tier)).exists()]
            if not paths and row not in VARIANT_OF:  # a variant is a row only where it was run
                lines.append(f"| {TRANSDUCTION_TITLES[task]} | {label} | not run | {paper_train} | — | {paper_test} "
                             "| — | — | — | — | — | — | — |")
            for path in paths:
                results = json.loads(path.read_text())
                lines.append(transduction_row(task, row, path, results, paper))
                recipes.add(transduction_recipe(results))
                notes += [note] if (note := hand_stopped_note(results, f"{TRANSDUCTION_TITLES[task]}, "
                                                                        f"{row_label(path)}")) else []
    lines.append("")
    lines += [note + "\n" for note in notes]
    lines += [f"Recipe of the rows run: {recipe}.\n" for recipe in sorted(recipes)]
    lines += papers_layout()
    return lines


def papers_layout() -> list[str]:
    """Table 3 as the paper lays it out: one cell per task and architecture, the paper's beside ours. The paper
    trains a grid of settings per architecture and reports its model of lowest average training perplexity; our grid
    is every seed of every row of the architecture (its variants included), then only the rows trained with the
    paper's optimiser. Models that met their row's loss target tie under that rule, so a cell gives how many met it
    and the span of their cells; where none did, the model of lowest logged loss, or the span of every model where
    some loss was not logged."""
    lines = ["### Table 3 in the paper's layout: the paper's rule over every model run", "",
             "The paper reports, per task and architecture, one model: the one of lowest average training perplexity "
             "over its grid of settings. Here the grid is every seed of every row above of that architecture, its "
             "variants included. Models that met their row's training-loss target tie under that rule (the target is "
             "the stop), so a cell gives train coarse/fine \\| test coarse/fine as the span over those models and "
             "how many of the models run met it; where none met it, the cells of the model whose last logged loss is "
             "lowest, or, where some model did not log its loss, the span over every model. A span over the models "
             "that met the target is what the rule cannot decide: the paper's protocol could have reported any of "
             "them; a span over every model is a loss we did not log.", ""]
    lines += layout_table(lambda results: True)
    lines += ["### Table 3 in the paper's layout, the paper's optimiser only", "",
              "The same rule over the rows trained with the paper's optimiser only: RMSProp at batch 10 with "
              "gradients clipped at norm 1 (the `…-rmsprop…` rows, with momentum or without, and the `paper` "
              "tier).", ""]
    return lines + layout_table(trained_as_the_paper)


def trained_as_the_paper(results: dict) -> bool:
    """Whether a row file's run used the paper's optimiser: RMSProp, batch 10, gradients clipped at norm 1."""
    training = results["settings"]["training"]
    batch = training["per_device_train_batch_size"] * training.get("gradient_accumulation_steps", 1)
    return training["optim"] == "rmsprop" and batch == 10 and training["max_grad_norm"] == 1.0


def layout_table(keep) -> list[str]:
    """The paper's-layout table over the row files for which `keep(results)` holds."""
    architectures = [row for row in MEMORY_ROWS if row not in VARIANT_OF]  # Table 3's columns, in its order
    lines = ["| task | " + " | ".join(f"{MEMORY_ROWS[arch][0]} | paper" for arch in architectures) + " |",
             "|---|" + "---|---|" * len(architectures)]
    for task in TRANSDUCTION_TASKS:
        cells = []
        for arch in architectures:
            files = [(row + (" (paper tier)" if tier == "paper" else ""), json.loads(path.read_text()))
                     for row in MEMORY_ROWS if VARIANT_OF.get(row, row) == arch
                     for tier in ("cpu", "paper") if (path := row_file(task, row, tier)).exists()]
            models = [(name, seed, metrics) for name, results in files if keep(results)
                      for seed, metrics in results["per_seed"].items()]
            paper = PAPER_TABLE_3[task][arch]
            cells += [layout_cell(models), " \\| ".join(f"{coarse:.2f}/{fine:.2f}" for coarse, fine in paper[:2])
                      + (f" ({paper[2]})" if len(paper) > 2 else "")]
        lines.append(f"| {TRANSDUCTION_TITLES[task]} | " + " | ".join(cells) + " |")
    return lines + [""]


def layout_cell(models: list[tuple[str, str, dict]]) -> str:
    """One architecture's Table 3 cell under the paper's rule, from its (row, seed, per-seed metrics) models."""
    if not models:
        return "not run"
    met = [metrics for _, _, metrics in models if metrics["train_seconds"].get("stopped_by_train_loss")]
    by_name = {f"{row}, seed {seed}": metrics for row, seed, metrics in models}
    if met:
        chosen, how = met, f"{len(met)} of {len(models)} met the target"
    elif pick := lowest_training_loss({"per_seed": by_name}):
        chosen, how = [by_name[pick]], f"none of {len(models)} met the target; lowest loss: {pick}"
    else:
        chosen, how = [metrics for _, _, metrics in models], f"none of {len(models)} met the target; not every loss logged: all {len(models)}"

    def span(split, metric):
        values = [metrics[split][metric] for metrics in chosen]
        low, high = min(values), max(values)
        return f"{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}–{high:.2f}"

    train, test = (f"{span(split, 'coarse_accuracy')}/{span(split, 'fine_accuracy')}" for split in ("validation", "test"))
    return f"{train} \\| {test} ({how})"


def transduction_row(task: str, row: str, path: Path, results: dict, paper: tuple) -> str:
    """One line of the Table 3 section: a row file's cells beside the paper's (`PAPER_TABLE_3[task][row]`)."""
    import statistics

    paper_train, paper_test = (f"{coarse:.2f} / {fine:.2f}" for coarse, fine in paper[:2])
    def spread(values):  # a row of one seed so far shows no "± 0.00"
        return statistics.pstdev(values) if len(values) > 1 else None

    cells = []
    for split in ("validation", "test"):
        coarse = [seed[split]["coarse_accuracy"] for seed in results["per_seed"].values()]
        fine = [seed[split]["fine_accuracy"] for seed in results["per_seed"].values()]
        cells.append(f"{fmt(statistics.fmean(coarse), spread(coarse), 2)} / {fmt(statistics.fmean(fine), spread(fine), 2)}")
    per_seed = " ".join(f"{seed['test']['coarse_accuracy']:.2f}" for seed in results["per_seed"].values())
    pick = lowest_training_loss(results)
    picked = (f"{results['per_seed'][pick]['test']['coarse_accuracy']:.2f} / "
              f"{results['per_seed'][pick]['test']['fine_accuracy']:.2f} (seed {pick})" if pick else "not recorded")
    wall = sum(seed.get("train_seconds", {}).get("value", 0.0) for seed in results["per_seed"].values())
    updates = [seed["train_seconds"]["updates"] for seed in results["per_seed"].values()
               if "updates" in seed.get("train_seconds", {})]
    by_hand = "".join(f"; seed {seed} stopped by hand" for seed in stopped_by_hand(results))
    time_cell = f"{wall / 60:.0f} min" + (f" ({' '.join(f'{n:,}' for n in updates)} updates{by_hand})" if updates else "")
    machine, code = machine_cell(results), code_cell(results, "unrecorded")
    link = f"[{cells[0]}]({task_folder(task)}/{path.name})"
    label = row_label(path)
    if len(paper) > 2:  # the paper's deep-LSTM cell is its best depth; say ours beside it
        label += f" ({results['model']['num_layers']} layers; the paper's: {paper[2]})"
    return (f"| {TRANSDUCTION_TITLES[task]} | {label} | {link} | {paper_train} | {cells[1]} "
            f"| {paper_test} | {per_seed} | {picked} | {len(results['seeds'])} | `{results['preset']}` "
            f"| {time_cell} | {machine} | {code} |")


def lowest_training_loss(results: dict) -> str | None:
    """The seed the paper's rule reports (its model of lowest average training perplexity): the seed whose last
    logged training loss is lowest, the first such seed at a tie; None unless every seed recorded that loss."""
    losses = {seed: metrics["train_loss"]["last_logged"] for seed, metrics in results["per_seed"].items()
              if "train_loss" in metrics}
    if not losses or len(losses) < len(results["per_seed"]):
        return None
    return min(losses, key=losses.get)


def transduction_recipe(results: dict) -> str:
    """A Table 3 row's model and training, read from the settings its row file recorded."""
    model, training = results["model"], results["settings"]["training"]
    params = results["settings"]["data"].get("benchmark_params") or ""
    lengths = re.search(r"train_lengths=\[(\d+),\s*(\d+)\]", params)
    size = re.search(r"train_size=(\d+)", params)
    parts = [f"{model['num_layers']} × {model['hidden_size']} LSTM, embeddings {model['embedding_size']}"]
    if model["backbone"] != "deep_lstm":
        parts.append(f"memory width {model['memory_width']}")
    if model.get("separate_target_lstm"):
        parts.append("a target-side LSTM of its own")
    if model.get("memory_push_bias") is not None:
        parts.append(f"push bias starting at {model['memory_push_bias']:g}")
    if model.get("memory_bottom_push_bias") is not None:
        parts.append(f"bottom push bias starting at {model['memory_bottom_push_bias']:g}")

    data = (f"{int(size.group(1)):,} training sequences" if size else "the builder's training sequences") + (
        f" of lengths {lengths.group(1)}–{lengths.group(2)}" if lengths else " of lengths 8–64")
    if curriculum := results["settings"].get("curriculum"):
        data += (f", the first {curriculum['updates']:,} updates drawn from those of at most "
                 f"{curriculum['max_source_length']} symbols")
    updates = f"{training['max_steps']:,} updates"
    if target := results["settings"].get("stop_at_train_loss"):
        window = f" (the mean over {training['logging_steps']:,} updates)" if training.get("logging_steps") else ""
        updates = (f"to convergence: until the first logged training loss{window} at or below {target:g}, "
                   f"at most {updates}")
    optimiser = training["optim"] + (f" ({training['optim_args']})" if training.get("optim_args") else "")
    warmup = f" after {int(training['warmup_steps']):,} warm-up updates" if training.get("warmup_steps") else ""
    return (f"{model['backbone']}: {', '.join(parts)}; {optimiser} at learning rate "
            f"{training['learning_rate']:g}{warmup}, batch {training['per_device_train_batch_size']}, "
            f"gradient clipping at {training['max_grad_norm']:g}, {updates}; {data}")


def table_order(path):
    """Rows in the paper's order (`ROWS`), the CPU tier of a row before its paper tier."""
    row, tier = row_and_tier(path)
    return (list(ROWS).index(row) if row in ROWS else len(ROWS), row, tier)


def draw_strips(task, strips, metric):
    """One dot per seed, one line per row: the spread the means hide."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 1.4 + 0.5 * len(strips)))
    for k, (label, values, paper_mean) in enumerate(strips):
        jitter = [((i % 5) - 2) * 0.04 for i in range(len(values))]
        ax.scatter(values, [k + j for j in jitter], s=18, alpha=0.75)
        ax.plot([sum(values) / len(values)] * 2, [k - 0.3, k + 0.3], color="black", linewidth=1.5)
        if paper_mean is not None:
            ax.scatter([paper_mean], [k + 0.3], marker="v", color="crimson", s=40, label="paper's mean" if k == 0 else None)
    ax.set_yticks(range(len(strips)), [label for label, *_ in strips])
    if any(paper_mean is not None for *_, paper_mean in strips):
        ax.legend(loc="lower left", fontsize=8, frameon=False)
    ax.set_ylim(-0.6, len(strips) - 0.4)
    ax.set_xlabel(f"test {metric} (one dot per seed; bar = our mean)")
    if metric == "exact_match":
        ax.set_xlim(-0.03, 1.03)
    ax.set_title(TASK_TITLES[task])
    fig.tight_layout()
    path = RESULTS / task_folder(task) / "seeds.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", choices=list(TASKS))
    parser.add_argument("--row", choices=list(ROWS))
    parser.add_argument("--tier", choices=TIERS, default="cpu")
    parser.add_argument("--seeds", default=None, help="default: 16 on Colors, 5 on SCAN (cpu tier), 3 on COGS/MT")
    parser.add_argument("--parallel_seeds", type=int, default=2)
    parser.add_argument("--data_dir", default=os.environ.get("LEXICAL_HF_DATA_DIR"))
    parser.add_argument("--output_root", default=str(REPO / "outputs" / "reproduce"))
    parser.add_argument("--summarize", action="store_true", help="only rebuild results/README.md and the figures")
    parser.add_argument("--extend", action="store_true",
                        help="add the seeds run now to the existing row file (same settings, new seeds) instead of replacing it")
    parser.add_argument("--rerun", metavar="WHY", default=None,
                        help="run --seeds again in the existing row file (same settings): their new entries replace "
                             "the earlier ones, which the row file keeps under superseded_seeds with WHY")
    parser.add_argument("--publish", action="store_true",
                        help="only rebuild the row's Hub-ready folder from its row file's first seed and settings, "
                             "and check its metrics against the row's (the row file is not changed)")
    parser.add_argument("--tolerance", type=float, default=0.0, help="with --publish: the largest accepted difference")
    args, extra = parser.parse_known_args(argv)
    args.extra = extra  # anything else goes to run_lexical.py unchanged (e.g. --benchmark_splits, --max_steps)
    if args.summarize:
        print(summarize())
        return 0
    if args.extend and args.rerun is not None:
        parser.error("--extend adds new seeds and --rerun runs seeds of the row again: one at a time")
    if args.rerun is not None and not args.seeds:
        parser.error("--rerun needs --seeds: the seeds of the row to run again")
    if not (args.task and args.row):
        parser.error("--task and --row are required (or --summarize)")
    if (args.task in TRANSDUCTION_TASKS) != (args.row in MEMORY_ROWS):
        parser.error(f"--row {args.row} does not run on --task {args.task}: the transduction tasks "
                     f"({', '.join(TRANSDUCTION_TASKS)}) take the rows {', '.join(MEMORY_ROWS)}, and only they do")
    if args.publish:
        if args.seeds or args.extend or args.rerun is not None:
            parser.error("--publish trains the row file's first seed; it takes neither --seeds, --extend nor --rerun")
        return publish_row(args)
    run_row(args)
    print(summarize())
    return 0


if __name__ == "__main__":
    sys.exit(main())
