"""The model registry: built-in models, selection, and reporting of missing packages."""
import pytest

from cdynamo.bench import registry
from cdynamo.bench.backends import ALL_BACKENDS, get_backend, order_backends

FAMILIES = {"micro", "torchvision", "timm", "transformers"}


def test_builtin_models_cover_every_family_the_suite_promises():
    specs = registry.all_models()
    names = {spec.name for spec in specs}
    assert {"pointwise_chain", "layernorm_gelu_linear", "mlp", "tv_resnet18", "tv_mobilenet_v3",
            "timm_resnet50", "timm_efficientnet_b0", "timm_vit_base", "hf_gpt2", "hf_bert", "hf_t5",
            "hf_distilbert", "hf_llama_small", "hf_vit"} <= names
    assert {spec.family for spec in specs} == FAMILIES
    for spec in specs:
        if spec.family != "micro":
            assert spec.requires, spec.name  # every zoo model says what it needs


def test_quick_is_the_three_microbenchmarks_and_two_small_models():
    quick = registry.select_models(quick=True)
    assert [s.name for s in quick if s.family == "micro"] == ["pointwise_chain", "layernorm_gelu_linear", "mlp"]
    assert len([s for s in quick if s.family != "micro"]) == 2


def test_selection_by_name_keeps_order_and_rejects_unknown_names():
    assert [s.name for s in registry.select_models(["mlp", "pointwise_chain"])] == ["mlp", "pointwise_chain"]
    with pytest.raises(KeyError, match="unknown model 'nope'"):
        registry.select_models(["nope"])


def test_missing_packages_are_named():
    registry.register_model("fake_needs_packages", "fake", requires=("torch", "no_such_package_xyz"))(lambda small: None)
    try:
        assert registry.get_model("fake_needs_packages").missing_packages() == ["no_such_package_xyz"]
        with pytest.raises(ValueError, match="already registered"):
            registry.register_model("fake_needs_packages", "fake")(lambda small: None)
    finally:
        registry.unregister_model("fake_needs_packages")


@pytest.mark.parametrize("name", ["pointwise_chain", "layernorm_gelu_linear", "mlp"])
def test_micro_builders_give_a_runnable_model_and_a_tiny_variant(name):
    spec = registry.get_model(name)
    model, inputs = spec.builder(True)
    assert model(*inputs).shape[0] == inputs[0].shape[0]
    tiny = spec.tiny_inputs(inputs)
    assert tiny[0].numel() < inputs[0].numel()
    model(*tiny)


def test_backend_names_and_order():
    assert ALL_BACKENDS[0] == "eager"
    assert order_backends(["torch:inductor", "cdynamo:eager", "eager", "cdynamo:eager"]) == [
        "eager", "cdynamo:eager", "torch:inductor"
    ]
    assert get_backend("cdynamo:aot_eager").backend == "aot_eager"
    with pytest.raises(ValueError, match="unknown backend"):
        get_backend("tvm")
    assert get_backend("eager").availability() == (True, "")
    assert get_backend("cdynamo:no_such_backend").availability()[0] is False
