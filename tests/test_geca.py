"""GECA augmentation (lexical_hf.augmentation): exact outputs on hand-made corpora, agreement with a brute-force
implementation written from the specification, determinism, filters, settings errors and mixing."""

import random

import datasets
import numpy as np
import pytest

from lexical_hf.augmentation import (
    FILTERS,
    PRESETS,
    AugmentResult,
    GecaSettings,
    augment,
    geca,
    mix_augmented,
)
from lexical_hf.augmentation._fragments import build_fragment_table, encode_corpus
from lexical_hf.augmentation._hashing import BASE, token_values

try:
    from lexical_hf.data import load_benchmark
except ImportError:  # the loader's former home
    from lexical_hf.benchmarks import load_benchmark

EVERYTHING = {"variants": None, "n_sample": None}  # every distinct candidate, no stop

# Primitives map to one output token; "twice" repeats, "left" prefixes a turn. "jump" is seen alone only.
SCAN_FRAGMENT = [
    ("jump", "I_JUMP"),
    ("walk", "I_WALK"),
    ("run", "I_RUN"),
    ("walk twice", "I_WALK I_WALK"),
    ("run twice", "I_RUN I_RUN"),
    ("walk left", "I_TURN_LEFT I_WALK"),
]
# The only template left by two or more fragments is "W0 ## W1" (jump, walk, run) and "W0 twice ## W1 W1" (walk,
# run). "W0 left ## I_TURN_LEFT W1" holds (walk, I_WALK), so it takes jump and run; "W0 twice ## W1 W1" takes jump.
SCAN_EXPECTED = {
    ("jump twice", "I_JUMP I_JUMP"),
    ("jump left", "I_TURN_LEFT I_JUMP"),
    ("run left", "I_TURN_LEFT I_RUN"),
}

# A Colors-like corpus. "W0 ## W1" is left by (dax, RED), (wif, GREEN) and (lug, BLUE); no other template is shared.
# Each other template holding one of those fragments takes the other two:
#   "W0 fep ## W1 W1 W1"      (dax) -> wif, lug
#   "W0 kiki wif ## GREEN W1" (dax) -> wif, lug
#   "dax kiki W0 ## W1 RED"   (wif) -> dax, lug
COLORS_LIKE = [
    ("dax", "RED"),
    ("wif", "GREEN"),
    ("lug", "BLUE"),
    ("dax fep", "RED RED RED"),
    ("dax kiki wif", "GREEN RED"),
]
COLORS_EXPECTED = {
    ("wif fep", "GREEN GREEN GREEN"),
    ("lug fep", "BLUE BLUE BLUE"),
    ("wif kiki wif", "GREEN GREEN"),
    ("lug kiki wif", "GREEN BLUE"),
    ("dax kiki dax", "RED RED"),
    ("dax kiki lug", "BLUE RED"),
}


def as_set(dataset: datasets.Dataset) -> set[tuple[str, str]]:
    return set(zip(dataset["source"], dataset["target"]))


def pairs_dataset(pairs) -> datasets.Dataset:
    sources, targets = zip(*pairs)
    return datasets.Dataset.from_dict({"source": list(sources), "target": list(targets)})


@pytest.fixture(scope="module")
def colors() -> datasets.Dataset:
    return load_benchmark("colors")["train"]


# --- exact outputs ------------------------------------------------------------------------------------------------


def test_scan_fragment_gives_exactly_the_hand_derived_pairs():
    new = augment(pairs_dataset(SCAN_FRAGMENT), "geca", preset="scan", **EVERYTHING)
    assert as_set(new) == SCAN_EXPECTED
    assert new.column_names == ["source", "target"]


def test_scan_fragment_with_the_preset_draws_a_subset():
    for seed in range(5):
        assert 1 <= len(as_set(augment(pairs_dataset(SCAN_FRAGMENT), preset="scan", seed=seed))) <= 3
        assert as_set(augment(pairs_dataset(SCAN_FRAGMENT), preset="scan", seed=seed)) <= SCAN_EXPECTED


def test_colors_like_corpus_gives_exactly_the_hand_derived_pairs():
    new = augment(pairs_dataset(COLORS_LIKE), wug_size=1, **EVERYTHING)
    assert as_set(new) == COLORS_EXPECTED


def test_one_span_fragments_only():
    # With one span per fragment, no template has a placeholder on both sides here: nothing survives.
    new, stats = augment(pairs_dataset(SCAN_FRAGMENT), wug_size=1, wug_count=1, return_stats=True, **EVERYTHING)
    assert len(new) == 0 and stats.kept == 0


# --- agreement with a brute-force implementation of the specification ---------------------------------------------


def _occurrences(seq, span):
    found, i = [], 0
    while i + len(span) <= len(seq):
        if seq[i : i + len(span)] == span:
            found.append(i)
            i += len(span)
        else:
            i += 1
    return found


def _replace(seq, spans, fills):
    marks = {o: (len(s), f) for s, f in zip(spans, fills) for o in _occurrences(seq, s)}
    out, i = [], 0
    while i < len(seq):
        if i in marks:
            out.extend(marks[i][1])
            i += marks[i][0]
        else:
            out.append(seq[i])
            i += 1
    return tuple(out)


def brute_force_geca(pairs, wug_size, wug_count):
    """Every pair GECA keeps (no variants limit, no n_sample), straight from the specification."""
    train = list(dict.fromkeys((tuple(s.split()), tuple(t.split())) for s, t in pairs))
    wugs = ("<W0>", "<W1>")
    frags_of, templates_of = {}, {}
    for source, target in train:
        joint = source + ("##",) + target
        spans = list(dict.fromkeys(
            joint[i : i + m] for m in range(1, wug_size + 1) for i in range(len(joint) - m + 1)
            if "##" not in joint[i : i + m]))
        fragments = [(a,) for a in spans]
        if wug_count == 2:
            fragments += [(a, b) for a in spans for b in spans if not set(a) & set(b)
                          and max(_occurrences_raw(joint, b)) > min(_occurrences_raw(joint, a))]
        for fragment in fragments:
            template = _replace(joint, fragment, [(w,) for w in wugs])
            frags_of.setdefault(template, set()).add(fragment)
            templates_of.setdefault(fragment, set()).add(template)
    sources, targets = {s for s, _ in train}, {t for _, t in train}
    kept = set()
    for t2, own in frags_of.items():
        sep = t2.index("##")
        if not (set(t2[:sep]) & set(wugs) and set(t2[sep:]) & set(wugs)):
            continue
        linked = {t1 for a in own for t1 in templates_of[a] if t1 != t2 and len(frags_of[t1]) > 1}
        for b in {b for t1 in linked for b in frags_of[t1]}:
            if b in own or all(set(b) & set(a) for a in own):
                continue
            filled = _replace(t2, [(w,) for w in wugs[: len(b)]], list(b))
            source, target = filled[:sep_index(filled)], filled[sep_index(filled) + 1 :]
            if source not in sources and target not in targets:
                kept.add((" ".join(source), " ".join(target)))
    return kept


def _occurrences_raw(seq, span):
    return [i for i in range(len(seq) - len(span) + 1) if seq[i : i + len(span)] == span]


def sep_index(seq):
    return seq.index("##")


def random_corpus(rng: random.Random):
    words = rng.sample(["a", "b", "c", "d", "x", "y"], rng.randint(2, 6))
    pairs = []
    for _ in range(rng.randint(2, 8)):
        source = rng.choices(words, k=rng.randint(1, 5))
        target = [w.upper() for w in source]
        if rng.random() < 0.5:
            target.reverse()
        if rng.random() < 0.3:
            target += rng.choices([w.upper() for w in words], k=2)
        pairs.append((" ".join(source), " ".join(target)))
    return pairs


def test_agrees_with_brute_force_on_random_corpora():
    rng = random.Random(0)
    for _ in range(120):
        pairs = random_corpus(rng)
        wug_size, wug_count = rng.randint(1, 3), rng.randint(1, 2)
        got = geca(pairs, GecaSettings(wug_size=wug_size, wug_count=wug_count, **EVERYTHING)).pairs
        assert set(got) == brute_force_geca(pairs, wug_size, wug_count), pairs
        assert len(got) == len(set(got))


def test_template_hashes_equal_hashes_of_the_built_templates():
    rng = random.Random(1)
    for _ in range(40):
        pairs = random_corpus(rng)
        wug_size = rng.randint(1, 4)
        corpus = encode_corpus(pairs, None, sort_pairs=False)
        table = build_fragment_table(corpus, wug_size, 2, None)
        columns = table.columns(np.arange(len(table.template_hash)))
        values = [int(v) for v in token_values(corpus.separator_id + 3)]
        span_tokens = table.spans.span_tokens
        for row in range(len(table.template_hash)):
            pair = corpus.used[columns["example"][row]]
            joint = corpus.sources[pair] + (corpus.separator_id,) + corpus.targets[pair]
            spans = [span_tokens[columns["span0"][row]]]
            if columns["span1"][row] >= 0:
                spans.append(span_tokens[columns["span1"][row]])
            template = _replace(joint, spans, [(corpus.separator_id + 1 + i,) for i in range(len(spans))])
            expected = sum(values[t] * pow(BASE, k, 2**64) for k, t in enumerate(template)) % 2**64
            assert int(table.template_hash[row]) == expected


# --- determinism, novelty, seeds ----------------------------------------------------------------------------------


def test_same_seed_same_output_and_different_seeds_differ(colors):
    first = augment(colors, seed=0, preset="colors")
    again = augment(colors, seed=0, preset="colors")
    assert list(zip(first["source"], first["target"])) == list(zip(again["source"], again["target"]))
    others = [as_set(augment(colors, seed=seed, preset="colors")) for seed in (1, 2, 3)]
    assert any(other != as_set(first) for other in others)


def test_random_order_does_not_depend_on_row_order(colors):
    shuffled = colors.shuffle(seed=7)
    assert list(augment(colors, seed=3)["source"]) == list(augment(shuffled, seed=3)["source"])


def test_every_output_is_new_filled_and_unique(colors):
    new = augment(colors, **EVERYTHING)
    assert len(new) > 50
    sources, targets = set(colors["source"]), set(colors["target"])
    vocabulary = {token for text in list(colors["source"]) + list(colors["target"]) for token in text.split()}
    pairs = list(zip(new["source"], new["target"]))
    assert len(pairs) == len(set(pairs))
    for source, target in pairs:
        assert source.split() and target.split()  # both sides non-empty
        assert source not in sources and target not in targets  # both sides new
        assert set(source.split()) | set(target.split()) <= vocabulary  # no placeholder or separator left
        assert "##" not in source.split() + target.split()


def test_seeds_are_composed_separately_and_never_pooled(colors):
    zero, stats_zero = augment(colors, seed=0, return_stats=True)
    one, stats_one = augment(colors, seed=1, return_stats=True)
    assert (stats_zero.seed, stats_one.seed) == (0, 1)
    assert "seed 0" in zero.info.description and "seed 1" in one.info.description
    assert stats_zero.kept == len(zero) and stats_one.kept == len(one)
    with pytest.raises(TypeError, match="pooling"):
        augment(colors, seed=[0, 1])
    with pytest.raises(TypeError, match="seed must be an int"):
        augment(colors, seed="0")


# --- visiting order and n_sample ----------------------------------------------------------------------------------


@pytest.mark.parametrize("variants", [None, 2])
def test_reference_order_gives_the_same_set_when_n_sample_does_not_bind(colors, variants):
    for pairs in (colors, pairs_dataset(SCAN_FRAGMENT)):
        random_order = augment(pairs, seed=5, variants=variants, n_sample=None, order="random")
        reference = augment(pairs, seed=5, variants=variants, n_sample=None, order="reference")
        assert as_set(random_order) == as_set(reference)
    assert list(random_order["source"]) != list(reference["source"]) or len(reference) < 2


def test_n_sample_stops_composition(colors):
    new, stats = augment(colors, n_sample=5, return_stats=True)
    assert len(new) == 5 and stats.kept == 5 and stats.stopped_early
    by_reference = augment(colors, n_sample=5, order="reference")
    assert len(by_reference) == 5
    assert as_set(augment(colors, n_sample=0)) == set()


def test_stats_account_for_every_candidate(colors):
    _, stats = augment(colors, variants=None, n_sample=None, return_stats=True)
    assert stats.candidates == stats.kept + sum(getattr(stats, name) for name in FILTERS)
    survivors = list(stats.survivors.values())
    assert survivors == sorted(survivors, reverse=True) and survivors[-1] == stats.kept
    assert stats.duplicate > 0 and not stats.stopped_early
    assert stats.unique_pairs == len(set(zip(colors["source"], colors["target"])))
    assert stats.to_dict()["survivors"] == stats.survivors
    assert f"{stats.kept} pairs kept" in stats.summary()


# "x" is a source word in the first pair and on both sides of the third (a name both languages write alike), so
# "W0 ## W1" style filling carries "y", a source-only word, into the third pair's target.
SHARED_TOKEN = [
    ("walk x", "WALK"),
    ("walk y", "WALK"),
    ("x sings", "SINGS x"),
]


def test_keep_sides_drops_pairs_that_carry_a_word_across_the_separator():
    new, stats = augment(pairs_dataset(SHARED_TOKEN), wug_size=1, wug_count=1, return_stats=True, **EVERYTHING)
    assert ("y sings", "SINGS y") in as_set(new) and stats.crossed_sides == 0  # the reference keeps it
    kept, stats = augment(pairs_dataset(SHARED_TOKEN), wug_size=1, wug_count=1, keep_sides=True, return_stats=True,
                          **EVERYTHING)
    assert as_set(kept) == as_set(new) - {("y sings", "SINGS y")}
    assert stats.crossed_sides == 1
    assert stats.candidates == stats.kept + sum(getattr(stats, name) for name in FILTERS)
    targets = {w for _, t in SHARED_TOKEN for w in t.split()}
    assert all(set(t.split()) <= targets for t in kept["target"])


def test_max_comp_len_skips_long_pairs_but_they_stay_training_data():
    pairs = SCAN_FRAGMENT + [("jump twice", "I_JUMP I_JUMP")]  # joint length 5: too long below
    new, stats = augment(pairs_dataset(pairs), preset="scan", max_comp_len=5, return_stats=True, **EVERYTHING)
    assert stats.too_long == 4 and ("jump twice", "I_JUMP I_JUMP") not in as_set(new)
    assert as_set(new) <= SCAN_EXPECTED


# --- links: max_adjacencies and windowed environments ---------------------------------------------------------------


def test_max_adjacencies_bounds_links(colors):
    unbounded = as_set(augment(colors, **EVERYTHING))
    assert as_set(augment(colors, max_adjacencies=10_000, **EVERYTHING)) == unbounded
    assert as_set(augment(colors, max_adjacencies=0, **EVERYTHING)) == set()
    fewer = as_set(augment(colors, max_adjacencies=1, **EVERYTHING))
    assert fewer < unbounded


def test_windowed_environments(colors):
    identical = as_set(augment(colors, **EVERYTHING))
    assert as_set(augment(colors, environment="window", window_size=100, **EVERYTHING)) == identical
    wider = as_set(augment(colors, environment="window", window_size=1, **EVERYTHING))
    assert wider > identical


# --- settings and input errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings, error, message",
    [
        ({"wug_size": 0}, ValueError, "wug_size must be >= 1"),
        ({"wug_count": 0}, ValueError, "wug_count must be >= 1"),
        ({"wug_count": 3}, ValueError, "wug_count must be 1 or 2"),
        ({"n_sample": -1}, ValueError, "n_sample must be >= 0"),
        ({"variants": 0}, ValueError, "variants must be >= 1"),
        ({"wug_size": 1.5}, TypeError, "wug_size must be an int"),
        ({"wug_size": True}, TypeError, "wug_size must be an int"),
        ({"environment": "fuzzy"}, ValueError, "environment must be one of"),
        ({"order": "sorted"}, ValueError, "order must be one of"),
        ({"separator": "a b"}, ValueError, "separator must be one"),
        ({"keep_sides": "yes"}, TypeError, "keep_sides must be True or False"),
        ({"wug_sise": 2}, TypeError, "did you mean 'wug_size'"),
        ({"preset": "mnist"}, ValueError, "unknown GECA preset"),
    ],
)
def test_bad_settings_are_clear_errors(settings, error, message):
    with pytest.raises(error, match=message):
        augment(pairs_dataset(SCAN_FRAGMENT), **settings)


def test_bad_data_are_clear_errors(colors):
    with pytest.raises(ValueError, match="unknown augmentation method 'eda'"):
        augment(colors, "eda")
    with pytest.raises(ValueError, match="empty"):
        augment(colors.select([]))
    with pytest.raises(ValueError, match="separator token '##'"):
        augment(pairs_dataset(SCAN_FRAGMENT + [("jump ## run", "I_JUMP")]))
    assert len(augment(pairs_dataset(SCAN_FRAGMENT + [("jump ## run", "I_JUMP")]), separator="|||")) >= 0
    with pytest.raises(ValueError, match="no column 'input'"):
        augment(colors, source_column="input")
    with pytest.raises(TypeError, match="row 1: expected a \\(source, target\\) pair of strings"):
        augment(datasets.Dataset.from_dict({"source": ["a", None], "target": ["A", "B"]}))
    with pytest.raises(TypeError, match="not a DatasetDict"):
        augment(load_benchmark("colors"))


def test_presets_and_custom_columns():
    assert PRESETS["scan"] == {"wug_size": 1, "max_comp_len": 40, "max_adjacencies": 1000, "n_sample": 1000}
    assert GecaSettings.from_preset("tatoeba") == GecaSettings()
    assert GecaSettings.from_preset("scan", n_sample=None).n_sample is None
    renamed = pairs_dataset(SCAN_FRAGMENT).rename_columns({"source": "command", "target": "actions"})
    result = augment(renamed, preset="scan", return_stats=True, source_column="command", target_column="actions",
                     **EVERYTHING)
    assert isinstance(result, AugmentResult) and result.dataset.column_names == ["command", "actions"]
    assert set(zip(result.dataset["command"], result.dataset["actions"])) == SCAN_EXPECTED


# --- mixing -------------------------------------------------------------------------------------------------------


def test_mix_augmented_draws_each_position_with_probability_aug_ratio():
    original = datasets.Dataset.from_dict({"source": [f"o{i}" for i in range(2000)], "target": ["X"] * 2000,
                                           "category": ["c"] * 2000})
    augmented = datasets.Dataset.from_dict({"source": [f"a{i}" for i in range(7)], "target": ["Y"] * 7})
    mixed = mix_augmented(original, augmented, aug_ratio=0.3, seed=0, mark_column="augmented")[:]  # dict of lists
    flags = np.array(mixed["augmented"])
    assert abs(flags.mean() - 0.3) < 0.03
    sources = np.array(mixed["source"])
    assert sources[~flags].tolist() == original[:]["source"]  # one pass over the original, in order
    assert set(sources[flags]) == set(augmented[:]["source"])  # augmented pairs cycled
    assert all(c is None for c, f in zip(mixed["category"], flags) if f)
    assert mixed["source"] == mix_augmented(original, augmented, 0.3, seed=0)[:]["source"]
    assert mixed["source"] != mix_augmented(original, augmented, 0.3, seed=1)[:]["source"]
    assert len(mix_augmented(original, augmented, None)) == 2007
    with pytest.raises(ValueError, match="aug_ratio"):
        mix_augmented(original, augmented, 1.0)
    with pytest.warns(UserWarning, match="empty"):
        assert len(mix_augmented(original, augmented.select([]), 0.3)) == 2000


def test_mix_augmented_repeats_the_original_until_every_augmented_pair_has_a_place():
    """14 originals and 73 augmented pairs (Colors): one pass would hold about 6 augmented examples, and training
    would never see the other 67; the passes repeat, in order, at the same ratio, until all have a place."""
    original = datasets.Dataset.from_dict({"source": [f"o{i}" for i in range(14)], "target": ["X"] * 14})
    augmented = datasets.Dataset.from_dict({"source": [f"a{i}" for i in range(73)], "target": ["Y"] * 73})
    mixed = mix_augmented(original, augmented, aug_ratio=0.3, seed=0, mark_column="augmented")[:]
    flags, sources = np.array(mixed["augmented"]), np.array(mixed["source"])
    assert set(sources[flags]) == set(augmented[:]["source"])
    passes = len(sources[~flags]) // 14
    assert passes > 1 and sources[~flags].tolist() == original[:]["source"] * passes
    assert abs(flags.mean() - 0.3) < 0.1
    big = datasets.Dataset.from_dict({"source": [f"o{i}" for i in range(2000)], "target": ["X"] * 2000})
    assert (~np.array(mix_augmented(big, augmented, 0.3, mark_column="augmented")["augmented"])).sum() == 2000
