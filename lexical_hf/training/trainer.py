"""`Seq2SeqTrainer` as the training pipeline uses it: a resumable length-grouped sampler, a wall-clock limit, a stop
requested by hand, and the validation metric that selects checkpoints."""

from __future__ import annotations

import copy
import time
from pathlib import Path

import datasets
import numpy as np
import torch
from torch import nn
from transformers import Seq2SeqTrainer, TrainerCallback
from transformers.trainer_pt_utils import LengthGroupedSampler, get_length_grouped_indices

from .. import evaluation
from ..decoding import generate_texts


class EpochSeededLengthGroupedSampler(LengthGroupedSampler):
    """transformers' `LengthGroupedSampler`, with each epoch's order drawn from its own generator seeded by (seed,
    epoch) instead of torch's global one.

    Why: the stock sampler draws from the global generator, and on a mid-epoch resume the Trainer builds that epoch's
    iterator before it restores the checkpoint's RNG state (`_run_epoch`: `skip_first_batches`, `_load_rng_state`
    after), so a resumed run trained on other batches than the uninterrupted one. Here the order depends only on the
    seed and the epoch, which the Trainer passes through `set_epoch` before every epoch (accelerate's
    `DataLoaderShard.set_epoch` reaches the sampler, also behind `skip_first_batches`); every process of a
    distributed run draws the same order.
    """

    def __init__(self, batch_size: int, lengths: list[int], seed: int):
        super().__init__(batch_size, lengths=lengths)
        self.seed, self.epoch = seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __iter__(self):
        # SeedSequence mixes (seed, epoch): seed 0's second epoch is not seed 1's first
        state = int(np.random.SeedSequence([self.seed, self.epoch]).generate_state(1, dtype=np.uint64)[0] >> 1)
        generator = torch.Generator().manual_seed(state)
        return iter(get_length_grouped_indices(self.lengths, self.batch_size, generator=generator))


class LengthCurriculumSampler(torch.utils.data.Sampler):
    """A length curriculum: the first `short_samples` examples of training (counted over epochs) are drawn from
    `short_indices` only, in seeded permutations of them, repeated as often as needed; the rest of the training draws
    from the whole set in a seeded random order per epoch, as the stock random sampler does.

    Every epoch has `num_examples` positions, so the Trainer's epoch arithmetic and a mid-epoch resume work as usual;
    an epoch's order depends only on (seed, epoch), as in `EpochSeededLengthGroupedSampler`. In the epochs the
    curriculum covers, the whole-set order fills the positions after it."""

    def __init__(self, num_examples: int, short_indices: list[int], short_samples: int, seed: int):
        if not short_indices:
            raise ValueError("the length curriculum found no training example short enough")
        self.num_examples, self.short_samples, self.seed, self.epoch = num_examples, short_samples, seed, 0
        self.short_indices = torch.as_tensor(short_indices, dtype=torch.long)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return self.num_examples

    def _generator(self, *key: int) -> torch.Generator:
        state = int(np.random.SeedSequence([self.seed, *key]).generate_state(1, dtype=np.uint64)[0] >> 1)
        return torch.Generator().manual_seed(state)

    def __iter__(self):
        start = self.epoch * self.num_examples  # the first position of this epoch, counted from the first update
        short = max(0, min(self.short_samples - start, self.num_examples))  # curriculum positions in this epoch
        order = torch.randperm(self.num_examples, generator=self._generator(0, self.epoch))
        if short:
            count = len(self.short_indices)
            first, last = start // count, (start + short - 1) // count  # the permutations of the short set needed
            cycles = torch.cat([self.short_indices[torch.randperm(count, generator=self._generator(1, cycle))]
                                for cycle in range(first, last + 1)])
            offset = start - first * count
            order = torch.cat([cycles[offset:offset + short], order[short:]])
        return iter(order.tolist())


class TrainingLoss(nn.Module):
    """`model(...).loss` of a training batch, run on the backbone's static path, as a module of tensors only: what
    `torch.cuda.make_graphed_callables` captures. It shares the model's parameters."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, labels, num_items_in_batch):
        static = self.model.config.static_shapes
        self.model.config.static_shapes = True  # the warm-up updates run the kernels that the capture records
        try:
            return self.model(input_ids=input_ids, attention_mask=attention_mask, labels=labels,
                              num_items_in_batch=num_items_in_batch).loss
        finally:
            self.model.config.static_shapes = static


class GraphedTrainingLoss:
    """The training loss as CUDA graphs, one per batch shape: the first batch of a shape is captured
    (`torch.cuda.make_graphed_callables`: three warm-up forward and backward passes, then forward and backward
    captured), every later batch of that shape replays them, with no kernel launches and no host synchronisation
    (inside the capture the model skips its host checks: the data collator ran them). Gradients reach `.grad` through
    autograd as usual, so clipping and the optimizer step stay the Trainer's. Autograd may keep the replayed
    backward's own output memory as `.grad` (it takes over a gradient nothing else refers to), which the next replay of
    that shape overwrites: hence one micro-batch an update (`gradient_accumulation_steps=1`).

    `capture` is `torch.cuda.make_graphed_callables`'s signature; tests pass a CPU stand-in."""

    def __init__(self, model, capture=None):
        self.model = model
        self.capture = capture or torch.cuda.make_graphed_callables
        self.graphs: dict[tuple, TrainingLoss] = {}

    def __call__(self, inputs: dict, num_items_in_batch=None) -> torch.Tensor:
        labels = inputs["labels"]
        if num_items_in_batch is None:  # what the model divides by without one: tokens, or sequences
            num_items_in_batch = (labels.new_full((), labels.shape[0]) if self.model.config.loss_normalization == "sequences"
                                  else labels.ne(-100).sum())
        args = (inputs["input_ids"], inputs["attention_mask"], labels,
                torch.as_tensor(num_items_in_batch, device=labels.device))
        key = tuple((tuple(arg.shape), arg.dtype) for arg in args)
        if key not in self.graphs:  # a new module each time: capturing replaces the module's forward
            self.graphs[key] = self.capture(TrainingLoss(self.model), args, allow_unused_input=True)
        return self.graphs[key](*args)


class LexicalSeq2SeqTrainer(Seq2SeqTrainer):
    """`Seq2SeqTrainer` whose `train_sampling_strategy="group_by_length"` sampler is `EpochSeededLengthGroupedSampler`
    (a resumed run trains on the same batches as an uninterrupted one), grouped by source length like the stock one
    or, with `group_by_target_length=True`, by source + target length; with `length_curriculum=(N, K)` the sampler
    is `LengthCurriculumSampler`: the first K updates on sources of at most N symbols.

    The stock sampler sorts by `input_ids` length alone (a `length` column would be dropped with the unused columns
    before the sampler sees it). Grouping by the target too cuts the padded positions that the target embedding
    projection and the head compute (the LSTM decoder's step loop already stops at each row's own target), at the
    price of batches of one target length (docs/ARCHITECTURE.md says what that did to SCAN jump).
    """

    def __init__(self, *args, group_by_target_length: bool = False, cuda_graphs: bool = False,
                 length_curriculum: tuple[int, int] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.group_by_target_length = group_by_target_length
        self.length_curriculum = length_curriculum
        self.graphed_loss = None
        if cuda_graphs:
            if self.accelerator.num_processes > 1 or self.compute_loss_func is not None:
                raise ValueError("cuda_graphs trains on one device with the model's own loss: not with several "
                                 "processes or a compute_loss_func")
            if self.args.gradient_accumulation_steps > 1:  # .grad may be the graph's own gradient memory
                raise ValueError("cuda_graphs needs gradient_accumulation_steps=1")
            self.graphed_loss = GraphedTrainingLoss(self.model)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """With `cuda_graphs`, a training batch's loss comes from its shape's CUDA graphs (`GraphedTrainingLoss`)."""
        if self.graphed_loss is None or return_outputs or not model.training:
            return super().compute_loss(model, inputs, return_outputs=return_outputs,
                                        num_items_in_batch=num_items_in_batch)
        # as the stock step: a model that does not take the Trainer's count (a loss per sequence) divides by its own
        return self.graphed_loss(inputs, num_items_in_batch if self.model_accepts_loss_kwargs else None)

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None, **gen_kwargs):
        """`Seq2SeqTrainer.prediction_step`, leaving the model's generation config as it was.

        The stock step fills every unset field of ``model.generation_config`` with transformers' defaults after each
        `generate()`; ``max_length=20`` then sits beside the model's own ``max_new_tokens`` cap, every later
        `generate()` warns that both were set, and each checkpoint saves the filled config. Decoding itself is not
        changed (``max_new_tokens`` takes precedence)."""
        generation_config = copy.deepcopy(self.model.generation_config)
        try:
            return super().prediction_step(model, inputs, prediction_loss_only, ignore_keys=ignore_keys, **gen_kwargs)
        finally:
            self.model.generation_config = generation_config

    def _get_train_sampler(self, train_dataset=None):
        train_dataset = self.train_dataset if train_dataset is None else train_dataset
        if self.length_curriculum is not None:
            return self._length_curriculum_sampler(train_dataset)
        if self.args.train_sampling_strategy != "group_by_length" or not isinstance(train_dataset, datasets.Dataset):
            return super()._get_train_sampler(train_dataset)
        sources = train_dataset["input_ids"]
        if self.group_by_target_length:
            lengths = [len(source) + len(target) for source, target in zip(sources, train_dataset["labels"])]
        else:
            lengths = [len(source) for source in sources]
        return EpochSeededLengthGroupedSampler(self.args.train_batch_size * self.args.gradient_accumulation_steps,
                                               lengths, seed=self.args.seed)

    def _length_curriculum_sampler(self, train_dataset) -> LengthCurriculumSampler:
        """`LengthCurriculumSampler` over the examples whose source has at most `length_curriculum[0]` symbols
        (special tokens not counted), for the first `length_curriculum[1]` updates of every process together."""
        max_length, updates = self.length_curriculum
        special = set(self.processing_class.all_special_ids)
        short = [index for index, source in enumerate(train_dataset["input_ids"])
                 if sum(token not in special for token in source) <= max_length]
        if not short:
            raise ValueError(f"the length curriculum trains first on sources of at most {max_length} symbols: the "
                             "training set has none")
        samples_per_update = self.args.train_batch_size * self.args.gradient_accumulation_steps * self.args.world_size
        return LengthCurriculumSampler(len(train_dataset), short, updates * samples_per_update, seed=self.args.seed)


class WallClockLimit(TrainerCallback):
    """Ends training once `seconds` of wall-clock time have passed since `on_train_begin`, after the update in flight.

    The step that crosses the limit is also evaluated and saved (with selection on validation, the weights reached
    become a candidate like every periodic checkpoint), so a run cut short by a machine's time limit still ends in a
    normal evaluation instead of being killed with nothing to show. `stopped` says whether the limit ended training."""

    def __init__(self, seconds: float):
        self.seconds, self.start, self.stopped = seconds, None, False

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step < state.max_steps and time.perf_counter() - self.start >= self.seconds:
            self.stopped = True
            end_training_here(args, control)
        return control


class SplitMonitor(TrainerCallback):
    """Every `interval` updates and after the last, decodes each split of `sources` (with `num_beams`, as the test
    evaluation after training does) and appends ``{"step": N, "<split>_<metric>": ...}`` to the Trainer's log
    history (and so to every checkpoint's `trainer_state.json`): how a held-out split, the test split of a
    generalisation benchmark say, moves during training. Monitoring only: checkpoint selection never reads it.
    `score(split, predictions)` gives a split's metrics (`evaluation.benchmark_metrics`); the numbers are logged."""

    def __init__(self, sources: dict[str, list[str]], score, tokenizer, interval: int, batch_size: int,
                 num_beams: int = 1):
        self.sources, self.score, self.tokenizer = sources, score, tokenizer
        self.interval, self.batch_size, self.num_beams = interval, batch_size, num_beams

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if state.global_step % self.interval and not control.should_training_stop and state.global_step < state.max_steps:
            return control
        entry = {"step": state.global_step}
        for split, sources in self.sources.items():
            metrics = self.score(split, generate_texts(model, self.tokenizer, sources, batch_size=self.batch_size,
                                                       num_beams=self.num_beams))
            entry.update({f"{split}_{name}": value for name, value in metrics.items()
                          if isinstance(value, (int, float)) and name != "num_examples"})
        model.train()
        state.log_history.append(entry)
        return control


class StopRequest(TrainerCallback):
    """Ends training at the first logging step after a file named `STOP` appears in `folder` (the seed's folder:
    `touch <output_dir>/seeds/seed-K/STOP`), after the update in flight: stopping one seed by hand without losing it.
    Like `WallClockLimit`, that update is evaluated and saved when the run evaluates, so the seed ends in a normal
    evaluation and its metrics record the stop. The file is read at logging steps only, the points where every
    process of a distributed run is at the same update; there the processes agree through an all-reduce, so they
    stop together. `stopped` says whether a request ended training; `forget()` removes the honoured file."""

    FILE_NAME = "STOP"

    def __init__(self, folder):
        self.path, self.stopped = Path(folder) / self.FILE_NAME, False

    def on_log(self, args, state, control, **kwargs):
        requested = torch.tensor([float(self.path.exists())], device=args.device)
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.all_reduce(requested, op=torch.distributed.ReduceOp.MAX)
        if requested.item() and state.global_step < state.max_steps:
            self.stopped = True
            end_training_here(args, control)
        return control

    def forget(self) -> None:
        if self.stopped:
            self.path.unlink(missing_ok=True)


def end_training_here(args, control) -> None:
    """Stop after the update in flight, evaluating and saving it when the run evaluates (a selection candidate)."""
    control.should_training_stop = True
    if args.eval_strategy != "no":
        control.should_evaluate = control.should_save = True


class TrainingLossStop(TrainerCallback):
    """Ends training at the first logged training loss (the mean over the last `logging_steps` updates) at or below
    `loss`: training to convergence, `max_steps` being the cap. Like `WallClockLimit`, the update that ends training
    is evaluated and saved when the run evaluates. `stopped` says whether the loss ended training. Losses logged
    before update `not_before` are not read (a length curriculum's: the loss on short sequences says nothing of the
    rest)."""

    def __init__(self, loss: float, not_before: int = 0):
        self.loss, self.not_before, self.stopped = loss, not_before, False

    def on_log(self, args, state, control, logs=None, **kwargs):
        loss = (logs or {}).get("loss", float("inf"))
        if self.not_before <= state.global_step < state.max_steps and loss <= self.loss:
            self.stopped = True
            end_training_here(args, control)
        return control


def decode(tokenizer, ids) -> list[str]:
    """Target strings of generated or label ids (-100 read as padding)."""
    ids = np.where(np.asarray(ids) < 0, tokenizer.pad_token_id, np.asarray(ids))
    return tokenizer.batch_decode(ids, skip_special_tokens=True)


def validation_exact_match(tokenizer, predicted_ids, label_ids) -> float:
    """Exact match of generated ids against label ids (-100 = ignored), for checkpoint selection.

    A target word outside the target vocabulary is <unk> in the labels, and decoding drops it, so the reference would
    lose the word and a prediction without it would match. Such a row is never an exact match in the test evaluation
    (which compares with the target strings); keeping an <unk> in the reference does the same here, since predictions
    are decoded without special tokens and never contain one."""
    label_ids = np.asarray(label_ids)
    unknown = (label_ids == tokenizer.unk_token_id).any(axis=-1)
    references = [f"{text} <unk>" if flag else text for flag, text in zip(unknown, decode(tokenizer, label_ids))]
    return evaluation.exact_match(decode(tokenizer, predicted_ids), references)
