"""Shared fixtures: tiny randomly initialised models built in code, small data files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from sentlab.devices import training_device
from sentlab.methods import validate_config

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# The one place tests take their device from: the device sentlab trains on here (a GPU where there is
# one, as the trainer and SentenceTransformer(...) choose it; CUDA_VISIBLE_DEVICES="" gives the CPU).
DEVICE = training_device()


@pytest.fixture(autouse=True)
def progress_lines_on():
    """Each test starts with progress lines on: a command run with --quiet in an earlier test (the
    setting is process-wide) must not silence the lines a later test reads."""
    from sentlab.progress import set_quiet

    set_quiet(False)
    yield


@pytest.fixture(scope="session")
def device() -> torch.device:
    return DEVICE


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for a test's child process (``python -m sentlab``, torchrun): this one's, with the
    checkout first on PYTHONPATH (for ``tests.*``) and whatever PYTHONPATH already holds kept after it,
    so a sentlab found through PYTHONPATH rather than installed is found there too."""
    root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def features_of(model, texts: list[str]) -> dict[str, torch.Tensor]:
    """``model``'s tokenised input for ``texts``, on the model's device (as the trainer hands it to a loss)."""
    from sentence_transformers.util import batch_to_device

    return batch_to_device(dict(model.preprocess(texts)), model.device)


WORDS = (
    "a the man woman dog cat is are plays playing runs running eats eating food ball park guitar "
    "piano child children sits sitting on in with red blue big small car road drives drive water "
    "swims swimming house tree girl boy music reads book walks street sky bird flies"
).split()

DATA_DIR = Path(os.environ.get("SENTLAB_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))


def the_error(stderr: str) -> str:
    """A failed command's error: its one ``...: error: ...`` line (progress lines before it aside),
    with no traceback anywhere."""
    errors = [line for line in stderr.strip().splitlines() if ": error: " in line]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr
    return errors[0]


def write_scored_pairs_card(folder: Path, corpus: Path, name: str, pairs: int = 30) -> Path:
    """A scored-pairs task card (``folder/<name>.yaml`` over ``folder/<name>.tsv``) of ``pairs`` pairs of
    consecutive corpus lines scored 0-4 in turn."""
    lines = corpus.read_text().splitlines()
    rows = "".join(f"{lines[i]}\t{lines[i + 1]}\t{i % 5}\n" for i in range(0, 2 * pairs, 2))
    (folder / f"{name}.tsv").write_text("s1\ts2\tscore\n" + rows, encoding="utf-8")
    card = folder / f"{name}.yaml"
    card.write_text(f"name: {name}\nkind: scored-pairs\nfile: {name}.tsv\ncolumns: [s1, s2, score]\n", encoding="utf-8")
    return card


def make_tiny_backbone(
    path: Path, hidden: int = 32, layers: int = 2, dropout: float = 0.1, seed: int = 0, architecture: str = "bert"
) -> Path:
    """A 2-layer BERT (or RoBERTa: ``architecture="roberta"``, the same word-level vocabulary) with a
    word-level vocabulary, saved as a transformers folder (safetensors)."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast, RobertaConfig, RobertaModel

    path.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", '"', ":", *WORDS]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(
        vocab={token: i for i, token in enumerate(vocab)}, do_lower_case=True, model_max_length=64
    )
    if tokenizer.tokenize("the dog")[0] == "[UNK]":  # a tokenizer that maps every word to [UNK] tests nothing
        raise RuntimeError("tiny tokenizer does not know its own vocabulary")
    torch.manual_seed(seed)
    shape = dict(
        vocab_size=len(vocab),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=hidden * 2,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    if architecture == "roberta":  # positions start after the padding index, as in roberta-base
        config = RobertaConfig(**shape, max_position_embeddings=66, pad_token_id=0, bos_token_id=2, eos_token_id=3)
        RobertaModel(config).save_pretrained(path, safe_serialization=True)
    else:
        BertModel(BertConfig(**shape, max_position_embeddings=64)).save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory, monkeypatch) -> Path:
    """Each test gets its own sentlab cache folder: nothing read from or written to ~/.cache/sentlab;
    the folders the test used are no longer marked in use by this process when it ends."""
    from sentlab.cache_folder import release_all_in_use

    folder = tmp_path_factory.mktemp("sentlab-cache")
    monkeypatch.setenv("SENTLAB_CACHE", str(folder))
    yield folder
    release_all_in_use()


@pytest.fixture(scope="session")
def tiny_backbone(tmp_path_factory) -> Path:
    return make_tiny_backbone(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="session")
def tiny_cross_encoder(tiny_backbone, tmp_path_factory) -> Path:
    """The tiny BERT with a one-label classifier, saved as sentence-transformers' ``CrossEncoder``
    (a sigmoid over its logit): a teacher that scores a pair of texts together. Its random logits are
    standardised on pairs of the vocabulary's words, so scores spread over (0, 1) instead of differing
    in the fifth decimal (a random BERT's [CLS] states are alike)."""
    import itertools

    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    model = CrossEncoder(str(tiny_backbone), num_labels=1)
    pairs = list(itertools.product(WORDS[:20], WORDS[20:40]))
    logits = torch.as_tensor(model.predict(pairs, activation_fn=torch.nn.Identity(), show_progress_bar=False))
    with torch.no_grad():
        head = model.model.classifier
        head.weight.div_(float(logits.std()))
        head.bias.copy_((head.bias - float(logits.mean())) / float(logits.std()))
    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    model.save(str(folder))
    return folder


@pytest.fixture(scope="session")
def tiny_static(tiny_backbone, tmp_path_factory) -> Path:
    """A static model (sentence-transformers' StaticEmbedding: a vector a token of the tiny vocabulary,
    averaged), random, saved as a sentence-transformers folder: a static start in seconds."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from transformers import AutoTokenizer

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny-static") / "static"
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_backbone))
    SentenceTransformer(modules=[StaticEmbedding(tokenizer, embedding_dim=16)], device="cpu").save(str(folder))
    return folder


@pytest.fixture(scope="session")
def tiny_backbone_no_dropout(tmp_path_factory) -> Path:
    return make_tiny_backbone(tmp_path_factory.mktemp("tiny-bert-nodrop"), dropout=0.0)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not (DATA_DIR / "senteval").is_dir():
        pytest.skip(f"shared data not found at {DATA_DIR}")
    return DATA_DIR


@pytest.fixture
def corpus_file(tmp_path) -> Path:
    import random

    rng = random.Random(0)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))) for _ in range(96)]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def qqp_file(corpus_file, tmp_path) -> Path:
    """QQP's layout (label, question 1, question 2, id) over consecutive corpus lines, labels 0 / 1 in turn."""
    lines = corpus_file.read_text().splitlines()
    path = tmp_path / "qqp.tsv"
    path.write_text("".join(f"{i % 2}\t{a}\t{b}\t{i}\n" for i, (a, b) in enumerate(zip(lines, lines[1:]))))
    return path


@pytest.fixture
def fake_sts_dir(tmp_path) -> Path:
    """A data folder with a small STS-B dev split (for dev evaluation during training tests)."""
    import random

    rng = random.Random(1)
    folder = tmp_path / "data" / "senteval" / "downstream" / "STS" / "STSBenchmark"
    folder.mkdir(parents=True)
    rows = []
    for i in range(24):
        a = " ".join(rng.choice(WORDS) for _ in range(5))
        b = " ".join(rng.choice(WORDS) for _ in range(5))
        rows.append(f"g\tf\t2012\t{i:04d}\t{rng.uniform(0, 5):.2f}\t{a}\t{b}")
    (folder / "sts-dev.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return tmp_path / "data"


def tiny_config(backbone: Path, corpus: Path, out: Path, data_dir: Path | None = None, pooler: str = "cls", **train):

    return validate_config(
        {
            "method": "simcse-unsup",
            "model": {"name": str(backbone), "pooler": pooler, "max_seq_length": 16},
            "data": {"train": str(corpus), "data_dir": str(data_dir) if data_dir else None},
            "train": {
                "output_dir": str(out),
                "batch_size": 8,
                "learning_rate": 5e-4,
                "logging_steps": 1,
                "progress_bar": False,
                **train,
            },
            "eval": {"dev_task": "STS-B" if data_dir else "none"},
        }
    )
