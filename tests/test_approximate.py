"""``--approximate`` on every family's own config with its ``model_type`` renamed: within 2% of the exact
total and 10% of the exact KV plus state, and every guess it makes said in ``assumptions``.

A renamed config whose ``architectures`` names a family's class is counted exactly (dispatch reads it);
the estimate itself is tested on the same config as the fallback sees it, where ``architectures`` only
lends the family's tying default, and on a config stripped of ``architectures`` too.
"""

import warnings

import pytest

from aiinfra import memory
from aiinfra.catalog import architectures as A
from aiinfra.catalog import models
from aiinfra.catalog.architectures.approximate import _approximate
from aiinfra.catalog.architectures.reading import _unwrap

#: Families whose MLP is not the gated three-matrix one the estimate assumes (GPT-2's Conv1D MLP, Pythia's
#: and StarCoder2's two biased matrices): their estimates are off by more, and say why.
NOT_GATED = {"gpt2", "gpt_neox", "starcoder2"}


def renamed(cfg: dict, keep_architectures=True) -> dict:
    """The language model's config with its model_type renamed (and its architectures dropped, if asked)."""
    cfg = _unwrap(cfg) if isinstance(cfg.get("text_config"), dict) else dict(cfg)
    if not keep_architectures:
        cfg.pop("architectures", None)
    return dict(cfg, model_type="renamed")


def hidden(cfg: dict) -> dict:
    return renamed(cfg, keep_architectures=False)


def pair(model_type):
    name = A.FAMILIES[model_type].shipped[0].name
    return models.load(name), _approximate(renamed(models.shipped_config(name)), "renamed", "renamed")


def request_bytes(m, n):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", models.ContextLengthWarning)
        return memory.request_state_bytes(m, n)


def _own_class(family) -> bool:
    """Whether the family's example config names one of the family's own classes (wrappers name theirs)."""
    cfg = renamed(models.shipped_config(family.shipped[0].name))
    return bool(set(cfg.get("architectures") or ()) & set(family.architectures))


@pytest.mark.parametrize("model_type", sorted(t for t, f in A.FAMILIES.items() if _own_class(f)))
def test_a_renamed_config_is_dispatched_by_its_architectures(model_type):
    name = A.FAMILIES[model_type].shipped[0].name
    cfg = renamed(models.shipped_config(name))
    m = models.load(cfg, approximate=True)
    assert m.exact and m.model_type == model_type
    assert models.total_params(m) == models.total_params(models.load(name))


@pytest.mark.parametrize("model_type", sorted(set(A.EXACT_FAMILIES) - NOT_GATED))
def test_the_estimate_of_a_renamed_family_is_close(model_type):
    exact, est = pair(model_type)
    assert not est.exact and est.assumptions and est.model_type == "renamed"
    assert models.total_params(est) == pytest.approx(models.total_params(exact), rel=0.02)
    for n in (1, 8192, 131_072):
        assert request_bytes(est, n) == pytest.approx(request_bytes(exact, n), rel=0.10), n


@pytest.mark.parametrize("model_type", sorted(set(A.EXACT_FAMILIES) - NOT_GATED))
def test_without_architectures_only_an_absent_tying_flag_is_lost(model_type):
    name = A.FAMILIES[model_type].shipped[0].name
    exact = models.load(name)
    est = models.load(hidden(models.shipped_config(name)), approximate=True)
    head = 0
    if (
        f"tie_word_embeddings={exact.tie_word_embeddings!r}" in exact.defaults_used
        and exact.tie_word_embeddings
    ):
        head = exact.vocab_size * exact.hidden_size  # the estimate takes transformers' untied default
        assert any("untied LM head" in a for a in est.assumptions)
    assert models.total_params(est) - head == pytest.approx(models.total_params(exact), rel=0.02)


@pytest.mark.parametrize("model_type", sorted(NOT_GATED))
def test_an_ungated_family_is_estimated_as_gated_and_says_so(model_type):
    exact, est = pair(model_type)
    assert any("gated (3-matrix) MLP" in a for a in est.assumptions)
    assert models.total_params(est) > 1.1 * models.total_params(exact)


@pytest.mark.parametrize(
    "model_type, words",
    [
        ("nemotron_h", "Mamba-2"),
        ("qwen3_next", "Gated DeltaNet"),
        ("qwen3_5_text", "Gated DeltaNet"),
        ("kimi_k2", "latent attention"),
        ("glm_moe_dsa", "indexer"),
        ("llama4_text", "shared experts of total width 8192"),
        ("glm4_moe", "1 of 46 layers keep a dense MLP"),
        ("exaone4", "Llama-shaped"),
        ("gemma4_text", "global_head_dim"),
    ],
)
def test_each_guess_is_listed(model_type, words):
    _, est = pair(model_type)
    assert any(words in a for a in est.assumptions), est.assumptions


def test_a_family_whose_example_names_another_class_is_wrapped_or_runs_as_another_family():
    # Kimi K2 runs as DeepseekV3ForCausalLM; Llama 4, Qwen3.5 and Gemma 4 ship as vision-language wrappers
    others = {t for t, f in A.FAMILIES.items() if not _own_class(f)}
    assert {"kimi_k2", "llama4_text", "gemma4_text"} <= others
    for model_type in others:
        cfg = models.shipped_config(A.FAMILIES[model_type].shipped[0].name)
        runs_as = {
            A.BY_ARCHITECTURE[a].model_type for a in cfg.get("architectures") or () if a in A.BY_ARCHITECTURE
        }
        assert "text_config" in cfg or runs_as - {model_type}, model_type


def test_the_tying_default_comes_from_the_family_the_architectures_name():
    cfg = models.shipped_config("SmolLM3-3B")  # no tie_word_embeddings: SmolLM3's class ties the head
    exact = models.load(cfg)
    assert exact.tie_word_embeddings and "tie_word_embeddings=True" in exact.defaults_used
    est = _approximate(dict(cfg, model_type="renamed"), "renamed", "renamed")
    assert models.total_params(est) == models.total_params(exact)
    assert any("smollm3's default (True)" in a for a in est.assumptions)
    untied = models.load(hidden(cfg), approximate=True)
    assert models.total_params(untied) - models.total_params(exact) == 128_256 * 2048


def test_the_named_family_lends_its_class_defaults_to_the_estimate():
    # an EXAONE 4 config without its window fields: Exaone4Config's 4,096-token window and one global layer in
    # four, as transformers builds it (the exact count of the same config agrees)
    drop = ("sliding_window", "sliding_window_pattern", "layer_types")
    cfg = {k: v for k, v in models.shipped_config("EXAONE-4.0-32B").items() if k not in drop}
    est = _approximate(dict(cfg, model_type="renamed"), "renamed", "renamed")
    assert est.layer_summary() == models.load(cfg).layer_summary() == "16 full + 48 sliding (4,096)"
    assert any(
        "exaone4's class defaults: sliding_window=4096, sliding_window_pattern=4" in a
        for a in est.assumptions
    )
