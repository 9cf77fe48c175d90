import json
import math
import pickle

import pytest
import torch

from sentlab.data.relations import Triple, triples_table, with_in_relation_negatives
from sentlab.encoders import build_encoder
from sentlab.errors import DataError
from sentlab.losses.rse import RSELoss
from tests.conftest import DEVICE, features_of


def naive_eq2(heads, relation_vectors, relation_ids, tails, negatives, tau):
    """Eq. 2 by loops: for each i, -log of exp(cos(h_i + r_k, h_j)/tau) over every tail and negative."""

    def cos(x, y):
        return float(x @ y / (x.norm() * y.norm()))

    total = 0.0
    for i in range(len(heads)):
        anchor = heads[i] + relation_vectors[relation_ids[i]]
        denominator = sum(
            math.exp(cos(anchor, tails[m]) / tau) + math.exp(cos(anchor, negatives[m]) / tau) for m in range(len(heads))
        )
        total += -math.log(math.exp(cos(anchor, tails[i]) / tau) / denominator)
    return total / len(heads)


def test_rse_loss_matches_eq2_by_hand(tiny_backbone_no_dropout):
    model = build_encoder(str(tiny_backbone_no_dropout), "cls").eval()
    loss = RSELoss(model, ["entailment", "duplicate_question"], temperature=0.05, gather_across_devices=False)
    with torch.no_grad():
        loss.relation_vectors.normal_(0, 1.0)  # large enough that the translation matters
    heads, tails, negatives = (
        ["a man plays", "the dog runs", "a girl reads"],
        ["a man plays music", "a dog runs", "the girl reads a book"],
        ["a woman sits", "the cat eats", "a boy swims"],
    )
    relation_ids = torch.tensor([0, 1, 1], device=DEVICE)
    features = [features_of(model, x) for x in (heads, tails, negatives)]
    with torch.no_grad():
        value = loss(features, relation_ids)
        h, t, n = (model(features_of(model, x))["sentence_embedding"] for x in (heads, tails, negatives))
    expected = naive_eq2(h, loss.relation_vectors.detach(), relation_ids.tolist(), t, n, 0.05)
    # one float32 cross-entropy vs float64 loops over the same embeddings: ~1e-6 relative
    assert math.isclose(float(value), expected, rel_tol=1e-5, abs_tol=1e-5)
    with torch.no_grad():
        loss.relation_vectors.zero_()
        # r_k moves the loss by ~3e-4 relative here, far outside the 1e-5 the match above allows
        assert not math.isclose(float(loss(features, relation_ids)), expected, rel_tol=1e-5, abs_tol=1e-5)


def test_in_relation_negatives_same_relation_other_row_fresh_per_read(tmp_path):
    triples = [Triple(f"q{i}", "duplicate_question", f"d{i}") for i in range(6)] + [
        Triple("p", "entailment", "e", "c"),
        Triple("p2", "entailment", "e2", "c2"),
    ]
    relations = ["entailment", "duplicate_question"]
    table, record = triples_table(lambda: iter(triples), relations, tmp_path / "t", key={"k": 1})
    assert record["counts"] == {"duplicate_question": 6, "entailment": 2} and table.cache_files  # memory-mapped
    dataset = with_in_relation_negatives(table, seed=0)
    draws = [dataset[i]["negative"] for _ in range(20) for i in range(6)]
    for k, negative in enumerate(draws):
        row = k % 6
        assert negative.startswith("d") and negative != f"d{row}"  # same relation, another row
    assert len({dataset[0]["negative"] for _ in range(30)}) > 1  # drawn afresh on each read
    assert dataset[6]["negative"] == "c" and dataset[7]["label"] == 0  # entailment keeps its contradiction
    again = with_in_relation_negatives(triples_table(lambda: iter(triples), relations, tmp_path / "u", {"k": 1})[0], 0)
    copied = pickle.loads(pickle.dumps(again))  # a data-loader worker's copy, made before any read, reopens the file
    assert [again[i]["negative"] for _ in range(20) for i in range(6)] == draws  # reproducible by seed
    assert [copied[i]["negative"] for _ in range(20) for i in range(6)] == draws


def test_the_triples_table_is_reused_for_its_key_and_rebuilt_otherwise(tmp_path):
    folder, reads = tmp_path / "t", []

    def read():
        reads.append(1)
        yield from [Triple("a", "paraphrase", "b"), Triple("c", "paraphrase", "d")]

    first, _ = triples_table(read, ["paraphrase"], folder, {"k": 1})
    again, _ = triples_table(read, ["paraphrase"], folder, {"k": 1})
    assert len(reads) == 1 and again["tail"] == ["b", "d"]  # the cached table, not a second read
    triples_table(read, ["paraphrase"], folder, {"k": 2})  # another key (a changed source): rebuilt
    assert len(reads) == 2
    (folder / "complete.json").unlink()  # a crash before the record: never read as complete
    triples_table(read, ["paraphrase"], folder, {"k": 2})
    assert len(reads) == 3

    def broken():
        yield Triple("a", "paraphrase", "b")
        raise DataError("bad.txt:2: empty field")

    with pytest.raises(DataError, match="bad.txt:2"):
        triples_table(broken, ["paraphrase"], folder, {"k": 3})
    # nothing half-written left behind: the folder is the earlier one, whose record is for another key
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert json.loads((folder / "complete.json").read_text())["key"] == {"k": 2}
    with pytest.raises(DataError, match="not in the relation list"):
        triples_table(read, ["entailment"], folder, {"k": 4})


def _grads(model, loss_module, features, labels, scale=1.0):
    model.zero_grad()
    vectors = getattr(loss_module, "loss", loss_module).relation_vectors  # a GradientCache's: its loss's
    vectors.grad = None
    value = loss_module(features, labels)
    (value * scale).backward()
    encoder = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return float(value.detach()), encoder, vectors.grad.clone()


def test_cached_loss_gives_the_same_loss_and_gradients_as_the_plain_one(tiny_backbone_no_dropout):
    from sentlab.losses.gradcache import GradientCache

    # float64: float32 gradients of this tiny model already differ by ~2e-4 of their norm between two
    # summation orders (checked against float64), which would hide a small caching error; in float64 the
    # two paths agree to ~1e-13 and a stale, unscaled or mis-assigned cache is off by O(1)
    model = build_encoder(str(tiny_backbone_no_dropout), "cls").double()  # no dropout: both passes agree
    relations = ["entailment", "duplicate_question"]
    plain = RSELoss(model, relations, gather_across_devices=False).double()
    inner = RSELoss(model, relations, gather_across_devices=False).double()
    cached = GradientCache(inner, mini_batch_size=2)
    with torch.no_grad():
        plain.relation_vectors.normal_(0, 1.0)
        inner.relation_vectors.copy_(plain.relation_vectors)
    heads = ["a man plays", "the dog runs", "a girl reads", "two cats sleep", "a boy swims"]
    tails = ["a man plays music", "a dog runs", "the girl reads a book", "cats are asleep", "a child in water"]
    negatives = ["a woman sits", "the cat eats", "a boy swims", "dogs bark", "a man reads"]
    labels = torch.tensor([0, 1, 1, 0, 1], device=DEVICE)
    value, encoder, relation = _grads(
        model, plain, [features_of(model, x) for x in (heads, tails, negatives)], labels, scale=3.0
    )
    value_c, encoder_c, relation_c = _grads(
        model, cached, [features_of(model, x) for x in (heads, tails, negatives)], labels, scale=3.0
    )
    assert math.isclose(value, value_c, rel_tol=1e-10)
    assert set(encoder) == set(encoder_c)
    for name, grad in encoder.items():
        if "key.bias" in name:  # softmax ignores a shift shared by all keys: this gradient is 0 up to rounding
            continue
        assert float((encoder_c[name] - grad).norm()) <= 1e-9 * float(grad.norm()), name
    # the outer factor (accumulation, fp16 scaling) reaches the relation vectors too: 3 x their gradient
    torch.testing.assert_close(relation_c, relation, rtol=1e-9, atol=1e-12)
    assert relation.abs().max() > 1e-3


def test_merged_relations_fix_the_vectors_at_zero(tiny_backbone_no_dropout):
    model = build_encoder(str(tiny_backbone_no_dropout), "cls")
    loss = RSELoss(model, ["entailment"], learn_relations=False)
    assert not any(p is loss.relation_vectors for p in loss.parameters())
    assert float(loss.relation_vectors.abs().sum()) == 0.0
