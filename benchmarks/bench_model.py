"""Speed of the lexical model on CPU (LSTM and Transformer backbones): training tokens/s, generation sentences/s,
FLOPs and FLOP/s.

Usage (writes results/bench_model.json):

    python benchmarks/bench_model.py --data-dir ../shared/data

What is measured
* Training: forward + backward + Adam step on batches of 128 SCAN addprim_jump (and COGS) training pairs, counting
  non-pad source + target tokens per second, with random batches (what a plain shuffled loader gives) and with
  batches grouped by source + target length (what `run_lexical.py --group_by_target_length true` gives; the
  Trainer's stock `group_by_length` sorts by the source alone).
* Generation: sentences/s for greedy and beam-5 `generate()` on SCAN test commands. The weights are random, so
  sequences rarely stop early: this is the worst case, every sequence runs to `max_length` (51).
* FLOPs per update (batch 128 × 4 accumulation = 512, the paper's setting) counted analytically from the matmuls
  actually executed (the LSTM decoder's step loop skips positions past each row's target; backward = 2 × forward),
  the achieved FLOP/s, and a plain `torch.matmul` FLOP/s measured in the same run: the machine's practical limit.
* Sizes: `SIZES` maps a name to config kwargs; `transformer_*` entries use `backbone="transformer"` and `syntatt_*`
  entries `backbone="syntactic_attention"` (FLOPs are counted for both too, see `transformer_forward_flops` and
  `syntatt_forward_flops`). Pick some with `--sizes`.
* Syntactic Attention is also trained at batch size 1, one Adam step per example, on as many pairs as one batch
  (`train_batch_1`): what its public code does. Its ratio to the batched tokens/s is measured in the same run.
* The ratio against the reference the issue names: the paper's public code at 2×512 on a 2-core machine trains at
  about 1,100 tokens/s on SCAN jump and 950 tokens/s on COGS.
"""

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

import torch

import lexical_hf
from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration, LexicalTokenizer

REFERENCE_TOKENS_PER_SECOND = {"scan_addprim_jump": 1100.0, "cogs": 950.0}
SIZES = {
    "paper_2x512": dict(embedding_size=512, hidden_size=512, num_layers=2, dropout=0.4, output_dropout=0.5),
    "small_1x64": dict(embedding_size=64, hidden_size=64, num_layers=1, dropout=0.1),
    # The Transformer CPU preset (benchmarks/train_transformer.py): 3+3 pre-norm layers, d_model 64, relative positions
    "transformer_small": dict(backbone="transformer", embedding_size=64, hidden_size=64, num_layers=3,
                              num_attention_heads=4, ffn_size=256, dropout=0.1, position_encoding="relative"),
    # Syntactic Attention, the presets' sizes: paper v1 (2-layer syntactic LSTMs of 200 per direction, decoder 400,
    # semantic embeddings 120) and cpu (1 layer of 100, decoder 200, embeddings 64)
    "syntatt_paper": dict(backbone="syntactic_attention", embedding_size=120, hidden_size=200, num_layers=2, dropout=0.5),
    "syntatt_cpu": dict(backbone="syntactic_attention", embedding_size=64, hidden_size=100, num_layers=1, dropout=0.5),
}


def load_pairs(name, data_dir):
    if name == "scan_addprim_jump":
        data = lexical_hf.load_benchmark("scan", "addprim_jump", data_dir=data_dir)
    else:
        data = lexical_hf.load_benchmark("cogs", "paper", data_dir=data_dir, splits=["train", "test"])
    return list(zip(data["train"]["source"], data["train"]["target"])), list(zip(data["test"]["source"], data["test"]["target"]))


def make_batches(pairs, batch_size, count, grouped, seed=0):
    """`count` batches; grouped = sort 50-batch mega-chunks by source + target length (LengthGroupedSampler's scheme)."""
    rng = random.Random(seed)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    if grouped:
        mega = batch_size * 50
        order = [i for start in range(0, len(order), mega)
                 for i in sorted(order[start:start + mega], key=lambda i: -len(pairs[i][0].split()) - len(pairs[i][1].split()))]
        batches = [order[k:k + batch_size] for k in range(0, len(order) - batch_size + 1, batch_size)]
        rng.shuffle(batches)
    else:
        batches = [order[k:k + batch_size] for k in range(0, len(order) - batch_size + 1, batch_size)]
    return [[pairs[i] for i in batch] for batch in batches[:count]]


def encode(tokenizer, batch):
    sources, targets = zip(*batch)
    enc = tokenizer(list(sources), text_target=list(targets), padding=True, return_tensors="pt")
    enc["labels"] = enc["labels"].masked_fill(enc["labels"] == tokenizer.pad_token_id, -100)
    return enc


def forward_flops(config, batch_size, source_len, target_len, decoder_row_steps):
    """Multiply-adds × 2 of every matmul the model runs on one padded batch; `decoder_row_steps` = Σ target lengths."""
    if config.backbone == "transformer":
        return transformer_forward_flops(config, batch_size, source_len, target_len)
    if config.backbone == "syntactic_attention":
        return syntatt_forward_flops(config, batch_size, source_len, target_len, decoder_row_steps)
    return lstm_forward_flops(config, batch_size, source_len, target_len, decoder_row_steps)


def lstm_forward_flops(config, batch_size, source_len, target_len, decoder_row_steps):
    """Multiply-adds × 2 of every matmul the LSTM model runs on one padded batch. With labels the decoder's step loop
    runs each row only to its own target length (`decoder_row_steps` row-steps in all); the embedding part of layer
    0's input projection and the head run on all B × T positions."""
    E, H, L = config.embedding_size, config.hidden_size, config.num_layers
    V = config.target_vocab_size
    B, S, T = batch_size, source_len, target_len
    lstm = lambda inputs: 2 * 4 * H * (inputs + H)  # noqa: E731  (gates of one LSTM layer, one token)
    encoder = B * S * (lstm(E) + (L - 1) * lstm(H))
    keys = 2 * B * S * H * H
    embedding_gates = B * T * 2 * 4 * H * E
    decoder_row_step = lstm(H) + (L - 1) * lstm(H) + 2 * 2 * S * H + 2 * 2 * H * H  # lstm(H): [feed; h] of layer 0
    head = 2 * B * T * (H * V + S * V + H)
    return encoder + keys + embedding_gates + decoder_row_steps * decoder_row_step + head


def transformer_forward_flops(config, batch_size, source_len, target_len):
    """Multiply-adds × 2 of every matmul the Transformer model runs on one padded batch (teacher forcing: the full
    T × T self-attention is computed, masked or not; layer norms, softmaxes and dropout are not counted)."""
    E, d, L, V = config.embedding_size, config.hidden_size, config.num_layers, config.target_vocab_size
    F = config.ffn_size or 4 * d
    B, S, T = batch_size, source_len, target_len
    relative = config.position_encoding == "relative"
    projection = E * d if E != d else 0
    attention = lambda queries, keys: 4 * d * d * queries + 2 * queries * keys * d + (queries * keys * d if relative else 0)  # noqa: E731
    encoder = B * (S * projection + L * (attention(S, S) + 2 * d * F * S))
    cross = 2 * d * d * T + 2 * d * d * S + 2 * T * S * d  # Q/O on targets, K/V on the memory, scores and context
    decoder = B * (T * projection + L * (attention(T, T) + cross + 2 * d * F * T))
    dedicated = B * (d * d * (T + S) + T * S * d) if config.attention_source == "dedicated_head" else 0
    head = B * T * (d * V + S * V + d)
    return 2 * (encoder + decoder + dedicated + head)


def syntatt_forward_flops(config, batch_size, source_len, target_len, decoder_row_steps):
    """Multiply-adds × 2 of every matmul the Syntactic Attention model runs on one padded batch. The encoder's LSTMs
    run packed (counted on all B × S positions: an upper bound); the decoder's LSTM runs each row to its own target
    (`decoder_row_steps`), its attention scores and context run on every row at every step, and d_i = α m and the
    head on all B × T positions."""
    E, H, L, V = config.embedding_size, config.hidden_size, config.num_layers, config.target_vocab_size
    B, S, T = batch_size, source_len, target_len
    lstm = lambda inputs, size: 4 * size * (inputs + size)  # noqa: E731  (one direction, one token)
    if config.syntax_encoder == "code":  # two stacks of H/2 over the H/2 syntax embedding, then a biLSTM of H
        syntax = 2 * (lstm(H // 2, H // 2) + (L - 1) * lstm(H // 2, H // 2)) + 2 * (lstm(H, H) + (L - 1) * lstm(2 * H, H))
    else:  # two stacks of H over the embedding E, one per direction
        syntax = 2 * (lstm(E, H) + (L - 1) * lstm(H, H))
    semantics = 2 * (lstm(E, E // 2) + (L - 1) * lstm(E, E // 2)) if config.sequential_semantics else 0
    encoder = B * S * (syntax + semantics) + B * (2 * H) ** 2
    feature = E + (2 * H if config.syntax_action else 0)
    attention = B * T * 2 * S * 2 * H  # scores s·h_j and context Σ α h_j, every row at every step
    decoder = decoder_row_steps * 2 * (2 * H * 8 * H)  # W_ih c_i and W_hh s_{i-1}
    semantic_output = B * T * S * (E + (2 * H if config.syntax_action else 0))
    head = B * T * (feature * V + S * V + 2 * H)
    return 2 * (encoder + attention + decoder + semantic_output + head)


def matmul_flops_per_second(size=1024, repeats=20):
    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.matmul(a, b)
    start = time.perf_counter()
    for _ in range(repeats):
        torch.matmul(a, b)
    return 2 * size**3 * repeats / (time.perf_counter() - start)


def bench_training(model, tokenizer, batches, accumulation=4):
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.998))
    encoded = [encode(tokenizer, batch) for batch in batches]
    step = lambda enc: model(**enc).loss.backward()  # noqa: E731
    step(encoded[0])  # warm-up (allocator, MKL)
    optimizer.zero_grad()
    tokens = flops = 0
    start = time.perf_counter()
    for k, enc in enumerate(encoded[1:], 1):
        step(enc)
        if k % accumulation == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            optimizer.zero_grad()
        tokens += int(enc["attention_mask"].sum()) + int((enc["labels"] != -100).sum())
        flops += 3 * forward_flops(model.config, *enc["input_ids"].shape, enc["labels"].shape[1], int((enc["labels"] != -100).sum()))
    seconds = time.perf_counter() - start
    batches_timed = len(encoded) - 1
    return {
        "batches_timed": batches_timed,
        "tokens_per_second": tokens / seconds,
        "seconds_per_batch": seconds / batches_timed,
        "seconds_per_update_of_4_batches": 4 * seconds / batches_timed,
        "flops_per_update_of_4_batches": 4 * flops / batches_timed,
        "achieved_flops_per_second": flops / seconds,
    }


def bench_generation(model, tokenizer, pairs, num_beams, batch_size=64, max_length=51):
    model.eval()
    sources = [source for source, _ in pairs]
    start = time.perf_counter()
    with torch.no_grad():
        for k in range(0, len(sources), batch_size):
            enc = tokenizer(sources[k:k + batch_size], padding=True, return_tensors="pt")
            model.generate(**enc, num_beams=num_beams, max_length=max_length, do_sample=False)
    return {"sentences": len(sources), "num_beams": num_beams, "sentences_per_second": len(sources) / (time.perf_counter() - start)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("LEXICAL_HF_DATA_DIR", str(Path(__file__).resolve().parents[2] / "shared" / "data")))
    parser.add_argument("--tasks", nargs="+", default=["scan_addprim_jump", "cogs"])
    parser.add_argument("--sizes", nargs="+", default=list(SIZES))
    parser.add_argument("--train-batches", type=int, default=9, help="timed batches + 1 warm-up")
    parser.add_argument("--generation-sentences", type=int, default=128)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                        help="torch thread counts to measure (on the project's 2-vCPU VM, 1 thread is faster for small ops)")
    parser.add_argument("--out", default="results/bench_model.json")
    args = parser.parse_args(argv)
    torch.manual_seed(0)

    report = {
        "command": "python " + " ".join([sys.argv[0], *(argv if argv is not None else sys.argv[1:])]),
        "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                    "cpu_count": os.cpu_count(), "torch_threads_measured": args.threads, "torch": torch.__version__,
                    "python": platform.python_version(), "load_average_1min_at_start": os.getloadavg()[0]},
        "matmul_flops_per_second": {},
        "reference_tokens_per_second": REFERENCE_TOKENS_PER_SECOND,
        "results": {},
    }
    for threads in args.threads:
        torch.set_num_threads(threads)
        report["matmul_flops_per_second"][str(threads)] = matmul_flops_per_second()
        print(f"torch.matmul 1024³, {threads} thread(s): {report['matmul_flops_per_second'][str(threads)] / 1e9:.1f} GFLOP/s")
    for task, threads in [(task, threads) for task in args.tasks for threads in args.threads]:
        torch.set_num_threads(threads)
        train, test = load_pairs(task, args.data_dir)
        tokenizer = LexicalTokenizer.from_texts(*zip(*train))
        lexicon = lexical_hf.learn_lexicon(tuple(zip(*train)), method="simple")
        for size in args.sizes:
            config = LexicalSeq2SeqConfig(source_vocab_size=tokenizer.source_vocab_size,
                                          target_vocab_size=tokenizer.target_vocab_size, **SIZES[size])
            model = LexicalSeq2SeqForConditionalGeneration(config)
            model.set_lexicon(lexicon, tokenizer)
            entry = {}
            for grouped in (False, True):
                batches = make_batches(train, 128, args.train_batches, grouped)
                result = bench_training(model, tokenizer, batches)
                result["fraction_of_matmul_peak"] = result["achieved_flops_per_second"] / report["matmul_flops_per_second"][str(threads)]
                # the reference was measured at the paper's size only
                result["ratio_vs_reference"] = (result["tokens_per_second"] / REFERENCE_TOKENS_PER_SECOND[task]
                                                if size == "paper_2x512" else None)
                entry["train_length_grouped" if grouped else "train_random_batches"] = result
                print(f"{task} {size} threads={threads} train {'grouped' if grouped else 'random '}: {result['tokens_per_second']:.0f} tok/s "
                      f"(ratio to reference: {result['ratio_vs_reference']}), {result['achieved_flops_per_second'] / 1e9:.1f} GFLOP/s")
            if SIZES[size].get("backbone") == "syntactic_attention":  # the public code's batch size, same run
                single = make_batches(train, 1, 128 + 1, False)
                result = bench_training(model, tokenizer, single, accumulation=1)
                result["fraction_of_matmul_peak"] = result["achieved_flops_per_second"] / report["matmul_flops_per_second"][str(threads)]
                result["batched_random_over_batch_1"] = entry["train_random_batches"]["tokens_per_second"] / result["tokens_per_second"]
                result["batched_grouped_over_batch_1"] = entry["train_length_grouped"]["tokens_per_second"] / result["tokens_per_second"]
                entry["train_batch_1"] = result
                print(f"{task} {size} threads={threads} train batch 1: {result['tokens_per_second']:.0f} tok/s; batched "
                      f"random / grouped are {result['batched_random_over_batch_1']:.1f}× / "
                      f"{result['batched_grouped_over_batch_1']:.1f}× faster")
            for beams in (1, 5):
                result = bench_generation(model, tokenizer, test[: args.generation_sentences], beams)
                entry[f"generate_beam{beams}"] = result
                print(f"{task} {size} threads={threads} generate beam={beams}: {result['sentences_per_second']:.1f} sentences/s")
            report["results"][f"{task}/{size}/threads={threads}"] = entry
    report["machine"]["load_average_1min_at_end"] = os.getloadavg()[0]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
