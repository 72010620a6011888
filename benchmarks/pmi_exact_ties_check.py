"""Check that PMI ties are settled by the documented tie-break rule, not by float rounding.

For each input v, the outputs with the highest PMI in exact arithmetic are those with the highest #(v, w) / #(w)
(the other terms of pmi(v; w) do not depend on w). This compares that exact set with the outputs whose stored float
PMI is highest, on COGS and English–Chinese train, and reports the inputs where they differ and whose hard choice is
not the documented one (the tied output seen with v in the most examples).

    python benchmarks/pmi_exact_ties_check.py ../shared/data
"""

import sys
from collections import defaultdict
from fractions import Fraction

import lexical_hf
from lexical_hf.lexicon import ParallelCorpus, learn_lexicon


def main(data_dir: str) -> None:
    for name in ("cogs", "eng_cmn"):
        train = lexical_hf.load_benchmark(name, data_dir=data_dir, splits=["train"])["train"]
        corpus = ParallelCorpus.from_dataset(train)
        lexicon = learn_lexicon(corpus, "pmi")
        v, w, count = corpus.cooccurrence()
        target_frequency = corpus.target.document_frequency
        rows = defaultdict(dict)
        for source_id, target_id, n in zip(v.tolist(), w.tolist(), count.tolist()):
            rows[source_id][target_id] = (n, int(target_frequency[target_id]))
        rounded, wrong = 0, []
        for source_id, row in rows.items():
            best = max(Fraction(n, frequency) for n, frequency in row.values())
            exact_ties = {t for t, (n, frequency) in row.items() if Fraction(n, frequency) == best}
            source = corpus.source_vocab[source_id]
            scores = lexicon.entries[source]
            float_ties = {t for t, score in scores.items() if score == max(scores.values())}
            if {corpus.target_vocab[t] for t in exact_ties} != float_ties:
                rounded += 1
                documented = corpus.target_vocab[min(exact_ties, key=lambda t: (-row[t][0], corpus.target_vocab[t]))]
                chosen = lexicon.hard_mapping()[source]
                if chosen != documented:
                    wrong.append((source, chosen, documented))
        print(f"{name} {len(train)} examples: exact ties settled by rounding: {rounded}; of which the hard choice "
              f"differs from the documented rule: {len(wrong)} {wrong[:5]}")


if __name__ == "__main__":
    main(sys.argv[1])
