"""Model cards for trained lexical models: YAML metadata (with a `model-index` of the measured results) + prose."""

import enum
from importlib import resources
from pathlib import Path

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from . import __version__
from .backbones import BACKBONES
from .configuration_lexical import LexicalSeq2SeqConfig
from .results import results_markdown

DEFAULT_TEMPLATE = "lexical_model_card.md"  # in model_cards/, installed as the package data lexical_hf.model_cards
BENCHMARK_DATASETS = {
    "colors": ("lake2019colors", "Colors (Lake, Linzen & Baroni 2019)"),
    "scan": ("scan", "SCAN"),
    "cogs": ("cogs", "COGS"),
    "eng_cmn": ("tatoeba-eng-cmn", "English–Chinese Tatoeba"),
}
MAIN_METRICS = {"exact_match": "exact_match", "bleu_paper/score": "bleu", "sacrebleu/score": "sacrebleu"}


def _template_path(template) -> Path:
    if template is not None:
        if not Path(template).is_file():
            raise FileNotFoundError(f"model card template {template} not found")
        return Path(template)
    try:
        return Path(str(resources.files("lexical_hf.model_cards") / DEFAULT_TEMPLATE))
    except ModuleNotFoundError:  # run from a checkout that is not installed: the templates' own folder there
        return Path(__file__).resolve().parents[1] / "model_cards" / DEFAULT_TEMPLATE


def build_model_card(results: dict, lexicon=None, template=None, repo_id: str | None = None) -> ModelCard:
    """A `huggingface_hub.ModelCard` for a `run_lexical.py` results dict."""
    benchmark = results.get("benchmark") or "custom"
    dataset_id, dataset_name = BENCHMARK_DATASETS.get(benchmark, (benchmark, benchmark))
    task = {"type": "translation" if benchmark == "eng_cmn" else "text2text-generation"}
    eval_results = []
    for split, metrics in results["summary"].items():
        for key, metric_type in MAIN_METRICS.items():
            if key in metrics:
                eval_results.append(EvalResult(
                    task_type=task["type"], dataset_type=dataset_id, dataset_name=dataset_name,
                    dataset_config=results.get("benchmark_config"), dataset_split=split, metric_type=metric_type,
                    metric_value=round(metrics[key]["mean"], 4),
                    metric_name=f"{metric_type} (mean over {metrics[key]['n']} seeds, std {metrics[key]['std']:.3f})",
                ))
    name = (repo_id or results["run_name"]).split("/")[-1]
    card_data = ModelCardData(
        language=["en", "zh"] if benchmark == "eng_cmn" else None, license="mit", library_name="transformers",
        tags=["lexical_hf", "lexical-translation", "seq2seq", "compositional-generalization", f"lexicon-{results['lexicon']}"],
        datasets=[dataset_id], metrics=sorted({r.metric_type for r in eval_results}) or None,
        model_name=name, eval_results=eval_results or None, pipeline_tag="text2text-generation",
    )
    model = results["model"]
    default_gate = LexicalSeq2SeqConfig().gate  # run_lexical.py records None for "the config's default"
    lexicon_description = (
        "no lexicon (plain attentional seq2seq: the gate is fixed to 1)" if results["lexicon"] == "none"
        else f"`{results['lexicon']}` lexicon with {lexicon.num_entries if lexicon is not None else '?'} entries, "
             f"τ = {results.get('lexicon_temperature', 0)}"
    )
    return ModelCard.from_template(
        card_data, template_path=str(_template_path(template)), model_name=name, version=__version__,
        repo_id=repo_id or name, example_source=results.get("example_source", ""),
        num_beams=results["training"].get("generation_num_beams") or 1,
        data_description=_data_description(benchmark, dataset_name, results.get("benchmark_config"))
                         + _augmentation_description(results),
        backbone_description=f"{BACKBONES[model['backbone']].display_name} ({model['backbone']}), {model['num_layers']} layer(s) × "
                             f"{model['hidden_size']} units, embeddings {model['embedding_size']}, dropout {model['dropout']}"
                             f" (+{model['output_dropout']} before p_write), gate `{model['gate'] or default_gate}`",
        lexicon_description=lexicon_description, preset=results["preset"], selection=results["selection"],
        command=results["command"], num_seeds=len(results["seeds"]),
        # str enums (a live run's SchedulerType, IntervalStrategy, ...) would render as "SchedulerType.INVERSE_SQRT"
        hyperparameters={k: v.value if isinstance(v, enum.Enum) else v for k, v in results["training"].items()},
        seeds=results["seeds"], machine=results["machine"], published_seed=results["seeds"][0],
        results_table=results_markdown(results),
    )


def _data_description(benchmark: str, dataset_name: str, config: str | None) -> str:
    if benchmark == "custom":
        return "User-provided parallel data."
    config_note = f", config `{config}`" if config else ""
    return f"{dataset_name}{config_note}, loaded with `lexical_hf.load_benchmark`."


def _augmentation_description(results: dict) -> str:
    """What the published seed trained on beyond the data: GECA's composed pairs and how they were mixed in."""
    augmentation = results.get("augmentation")
    if not augmentation:
        return ""
    seed = results["seeds"][0]
    new_pairs = results["per_seed"].get(str(seed), {}).get("augmentation", {}).get("new_pairs", "?")
    mixing = (f"each training example was drawn from them with probability {augmentation['aug_ratio']:g}"
              if augmentation["mixing"] == "ratio" else "they were added to the training data")
    preset = f"`{augmentation['preset']}` settings" if augmentation.get("preset") else "the reference's default settings"
    params = "".join(f", {name}={value}" for name, value in sorted((augmentation.get("params") or {}).items()))
    return (f" Augmented with {augmentation['method'].upper()} (Andreas 2020), composed anew for each seed with the "
            f"{preset}{params}: {new_pairs} new pairs for the published seed {seed}; {mixing}. The lexicon was "
            "learned from the original training data.")


def write_model_card(folder, results: dict, lexicon=None, template=None, repo_id: str | None = None) -> Path:
    path = Path(folder) / "README.md"
    build_model_card(results, lexicon, template, repo_id).save(path)
    return path
