import numpy as np

from sentlab.encoders import build_encoder
from sentlab.encoders.batching import encode_by_length, token_lengths


def test_batching_by_length_keeps_the_order_and_the_vectors(tiny_backbone_no_dropout, corpus_file):
    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    model.eval()
    texts = corpus_file.read_text().splitlines()
    lengths = token_lengths(model, texts)
    assert lengths.tolist() == [len(model.tokenizer(t)["input_ids"]) for t in texts]
    got = encode_by_length(model, texts, batch_size=8)
    # reference: each text alone (no padding at all); padding is masked, so batches only change float
    # rounding (values O(1), sums of 32-64 float32 terms over 2 layers: < 1e-5)
    alone = np.stack([model.encode([t])[0] for t in texts])
    np.testing.assert_allclose(got, alone, atol=1e-5)
    assert got.dtype == np.float32
