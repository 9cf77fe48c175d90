import pytest
import torch
import torch.nn.functional as F

from sentlab.encoders import build_encoder
from sentlab.errors import ConfigError
from sentlab.losses.tsdae import TSDAELoss
from tests.conftest import features_of

SENTENCES = ["a man plays the guitar", "the dog runs", "a girl reads a red book in the park"]
NOISY = ["man guitar", "dog", "girl book park"]


def features(model, texts):
    return features_of(model, texts)


@pytest.fixture
def cls_model(tiny_backbone_no_dropout):
    torch.manual_seed(0)
    return build_encoder(str(tiny_backbone_no_dropout), "cls").eval()


def naive_j_sdae(loss: TSDAELoss, s: torch.Tensor, originals: dict) -> torch.Tensor:
    """-J_SDAE by decoding step by step: for each sentence and t, the decoder reads x_<t and s only,
    and -log softmax(h_t^T e)[x_t] is summed over t; then averaged over sentences."""
    total = []
    for row in range(s.shape[0]):
        length = int(originals["attention_mask"][row].sum())
        ids = originals["input_ids"][row, :length]
        nll = 0.0
        for t in range(1, length):
            logits = loss.decoder(input_ids=ids[None, :t], encoder_hidden_states=s[row][None, None]).logits[0, -1]
            nll = nll - F.log_softmax(logits, dim=-1)[ids[t]]
        total.append(nll)
    return torch.stack(total).mean()


def test_j_sdae_matches_a_naive_loop_over_decoding_steps(cls_model):
    loss = TSDAELoss(cls_model).eval()
    noisy, original = features(cls_model, NOISY), features(cls_model, SENTENCES)
    with torch.no_grad():
        value = loss([noisy, original])
        s = cls_model(features(cls_model, NOISY))["sentence_embedding"]
        expected = naive_j_sdae(loss, s, original)
    # float32 through the same weights along two paths (padded batch vs one prefix at a time):
    # they differ only by summation order, ~1e-6 relative on values ~10-40
    torch.testing.assert_close(value, expected, rtol=1e-5, atol=1e-4)
    token_mean = TSDAELoss(cls_model, reduction="token-mean").eval()
    token_mean.decoder.load_state_dict(loss.decoder.state_dict())
    with torch.no_grad():
        n_targets = original["attention_mask"][:, 1:].sum()
        per_sentence = value * len(SENTENCES)
        torch.testing.assert_close(token_mean([noisy, original]), per_sentence / n_targets, rtol=1e-5, atol=1e-5)


def test_cross_attention_sees_only_the_sentence_vector(cls_model):
    loss = TSDAELoss(cls_model).eval()
    seen = {}

    def capture(module, args, kwargs):
        seen["states"] = kwargs["encoder_hidden_states"]

    loss.decoder.register_forward_pre_hook(capture, with_kwargs=True)
    noisy, original = features(cls_model, NOISY), features(cls_model, SENTENCES)
    with torch.no_grad():
        base = loss([noisy, original])
        s = cls_model(features(cls_model, NOISY))["sentence_embedding"]
    assert seen["states"].shape == (len(SENTENCES), 1, s.shape[1])
    torch.testing.assert_close(seen["states"][:, 0], s)

    def perturb(position_slice):
        def hook(module, args, output):
            output["token_embeddings"] = output["token_embeddings"].clone()
            output["token_embeddings"][:, position_slice] += 5.0
            return output

        return cls_model[0].register_forward_hook(hook)

    handle = perturb(slice(1, None))  # every encoder token state except [CLS] (= s)
    with torch.no_grad():
        unchanged = loss([features(cls_model, NOISY), original])
    handle.remove()
    torch.testing.assert_close(unchanged, base, rtol=0, atol=0)
    handle = perturb(slice(0, 1))  # s itself: the loss must move (the test can fail)
    with torch.no_grad():
        moved = loss([features(cls_model, NOISY), original])
    handle.remove()
    assert abs(float(moved - base)) > 1e-3


def test_tied_decoder_shares_the_encoders_tensors_untied_copies_them(cls_model):
    encoder = cls_model[0].auto_model
    tied = TSDAELoss(cls_model)
    body = tied.decoder.base_model
    assert body.embeddings.word_embeddings.weight is encoder.embeddings.word_embeddings.weight
    assert tied.decoder.get_output_embeddings().weight is encoder.embeddings.word_embeddings.weight  # e_i
    assert body.encoder.layer[1].attention.self.query.weight is encoder.encoder.layer[1].attention.self.query.weight
    shared = {id(p) for p in encoder.parameters()}
    own = [n for n, p in tied.decoder.named_parameters() if id(p) not in shared]
    assert own and all("crossattention" in n or n.startswith("cls.") for n in own)
    untied = TSDAELoss(cls_model, tie=False)
    weight = untied.decoder.base_model.encoder.layer[1].attention.self.query.weight
    assert weight is not encoder.encoder.layer[1].attention.self.query.weight
    torch.testing.assert_close(weight, encoder.encoder.layer[1].attention.self.query.weight, rtol=0, atol=0)


def test_architecture_without_a_decoder_class_is_a_one_line_error(tmp_path):
    from transformers import BertTokenizerFast, DistilBertConfig, DistilBertModel

    from tests.conftest import make_tiny_backbone

    bert = make_tiny_backbone(tmp_path / "bert")
    config = DistilBertConfig(vocab_size=60, dim=32, n_layers=1, n_heads=2, hidden_dim=64, max_position_embeddings=64)
    DistilBertModel(config).save_pretrained(tmp_path / "distil")
    BertTokenizerFast.from_pretrained(bert).save_pretrained(tmp_path / "distil")
    model = build_encoder(str(tmp_path / "distil"), "cls")
    with pytest.raises(ConfigError) as err:
        TSDAELoss(model)
    message = str(err.value)
    assert "\n" not in message and "tsdae.tie: false" in message and "tsdae.decoder" in message
    loss = TSDAELoss(model, tie=False, decoder=str(bert))  # the option the message names works
    value = loss([features(model, NOISY), features(model, SENTENCES)])
    assert torch.isfinite(value)
