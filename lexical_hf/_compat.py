"""Differences between the transformers releases the package runs on (5.17, the GPU image's, to the newest), in one
place. Everything else in the package uses the names defined here."""

import dataclasses

from transformers.modeling_outputs import Seq2SeqLMOutput

try:  # transformers >= 5.18
    from transformers.utils.hub import resolve_revision
except ImportError:
    resolve_revision = None

# transformers 5.24 renamed the decoder state, in every model output and in generate()'s keyword arguments, from
# `past_key_values` to `cache`. generate() looks the state up in an output under its own version's name only, so the
# model output's field (and what `prepare_inputs_for_generation` hands to `forward`) takes the installed version's name.
CACHE_NAME = "cache" if "cache" in Seq2SeqLMOutput.__dataclass_fields__ else "past_key_values"



def with_cache_field(fields: type, name: str) -> type:
    """The `ModelOutput` dataclass `fields` extended by the decoder-state field under the installed transformers' name
    (`CACHE_NAME`), as a dataclass called `name`. A class with both names would break 5.24, whose `ModelOutput` maps
    the old name onto the new one."""
    namespace = {"__annotations__": {CACHE_NAME: object}, CACHE_NAME: None, "__doc__": fields.__doc__,
                 "__module__": fields.__module__, "__qualname__": name}
    return dataclasses.dataclass(type(fields)(name, (fields,), namespace))


def pinned_revision(repo_id, revision, *, token, local_files_only, cache_dir):
    """The commit that ``revision`` of a Hub repository points to now, or ``revision`` itself when it cannot be
    resolved (offline, unknown repository, …): loading then reports the problem, as transformers does."""
    if resolve_revision is not None:
        return resolve_revision(
            repo_id, revision, token=token, local_files_only=local_files_only, cache_dir=cache_dir
        ) or revision
    from huggingface_hub import HfApi, constants

    if local_files_only or constants.HF_HUB_OFFLINE:
        return revision
    try:
        return HfApi(token=token).model_info(str(repo_id), revision=revision).sha or revision
    except Exception:  # fail open, like transformers' resolve_revision
        return revision
