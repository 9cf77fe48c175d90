"""Any preset of ``sentlab/presets/`` pointed at a tiny random model of its architecture and a few hundred
fake sentences in the formats it reads: the preset's own method, losses, temperatures, learning
rates, poolers and precision, 3 steps long. New presets are covered without a line here, as long as
their data formats are among those below."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import yaml

from sentlab.presets import PRESETS_DIR
from tests.conftest import WORDS, make_tiny_backbone

CONFIGS = PRESETS_DIR
TOP_LEVEL_PRESETS = sorted(CONFIGS.glob("*.yaml"))
NLI_LABELS = ("entailment", "neutral", "contradiction")
# one preset for every method and loss variant (RSE with and without Gradient Cache, both RankCSE losses)
METHOD_PRESETS = {
    "simcse-unsup": "simcse-unsup-bert-base",
    "simcse-sup": "simcse-sup-bert-base",
    "rankencoder": "rankencoder-simcse-bert-base",
    "rankcse-listnet": "rankcse-listnet-bert-base",
    "rankcse-listmle": "rankcse-listmle-roberta-base",
    "tsdae": "tsdae-bert-base",
    "ct": "ct-bert-base",
    "mlm": "mlm-bert-base",
    "bert-flow": "bertflow-bert-base",
    "rse-gradient-cache": "rse-sts-bert-base",
    "rse": "rse-minilm-cpu",
    "supervised": "nli-sts-supervised-bert-base",
}


def is_gpu_preset(path: Path) -> bool:
    """The paper presets for GPUs (BERT-base / RoBERTa-base, the raw-LM GPU recipe, the supervised
    stages); the ``-cpu`` presets run on the packaged MiniLM."""
    return not path.stem.endswith("-cpu") and "-cpu-" not in path.stem


def sentences(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) for _ in range(n)]


class FakeData:
    """Files in each format a preset may name, written once into ``root``."""

    def __init__(self, root: Path, rows: int = 300):
        self.root, self.rows = root, rows
        root.mkdir(parents=True, exist_ok=True)
        self.lines = sentences(rows)
        self._made: dict[str, Path] = {}

    def _once(self, name: str, write) -> Path:
        if name not in self._made:
            self._made[name] = write(self.root / name)
        return self._made[name]

    def text(self) -> Path:
        return self._once("sentences.txt", lambda p: _write(p, "\n".join(self.lines) + "\n"))

    def nli_csv(self, columns: list[str]) -> Path:
        def write(p: Path) -> Path:
            rows = [",".join(columns)] + [
                ",".join(self.lines[(i + k) % self.rows] for k in range(len(columns))) for i in range(self.rows)
            ]
            return _write(p, "\n".join(rows) + "\n")

        return self._once("nli.csv", write)

    def snli_folder(self, split: str = "train") -> Path:
        def write(folder: Path) -> Path:
            folder.mkdir()
            premises = [self.lines[i // 3 * 3] for i in range(self.rows)]  # three hypotheses per premise
            _write(folder / f"s1.{split}", "\n".join(premises) + "\n")
            _write(folder / f"s2.{split}", "\n".join(self.lines) + "\n")
            return _write(
                folder / f"labels.{split}", "\n".join(NLI_LABELS[i % 3] for i in range(self.rows)) + "\n"
            ).parent

        return self._once(f"SNLI-{split}", write)

    def paraphrases(self) -> Path:
        """ParaNMT lines: ``s1 \\t s2 \\t score``."""
        return self._once(
            "paranmt.txt",
            lambda p: _write(
                p, "".join(f"{a}\t{b}\t0.{i % 9 + 1}\n" for i, (a, b) in enumerate(zip(self.lines, self.lines[1:])))
            ),
        )

    def nli_jsonl(self) -> Path:
        import json

        def write(p: Path) -> Path:
            rows = [
                json.dumps({"sentence1": self.lines[i // 3 * 3], "sentence2": line, "gold_label": NLI_LABELS[i % 3]})
                for i, line in enumerate(self.lines)
            ]
            return _write(p, "\n".join(rows) + "\n")

        return self._once("nli.jsonl", write)

    def qqp(self) -> Path:
        return self._once(
            "qqp.tsv",
            lambda p: _write(
                p, "".join(f"{i % 2}\t{a}\t{b}\t{i}\n" for i, (a, b) in enumerate(zip(self.lines, self.lines[1:])))
            ),
        )

    def stsb_file(self) -> Path:
        rng = random.Random(1)
        return self._once(
            "sts-train.csv",
            lambda p: _write(
                p,
                "".join(
                    f"g\tf\t2012\t{i:04d}\t{rng.uniform(0, 5):.2f}\t{a}\t{b}\n"
                    for i, (a, b) in enumerate(zip(self.lines, self.lines[1:]))
                ),
            ),
        )

    def captions(self) -> Path:
        """A Flickr token file, five captions an image (``image.jpg#k \\t caption``)."""
        return self._once(
            "captions.token.txt",
            lambda p: _write(p, "".join(f"{i // 5}.jpg#{i % 5}\t{line}\n" for i, line in enumerate(self.lines))),
        )

    def qnli(self) -> Path:
        """GLUE's QNLI TSV with its header."""
        return self._once(
            "qnli.tsv",
            lambda p: _write(
                p,
                "index\tquestion\tsentence\tlabel\n"
                + "".join(
                    f"{i}\t{a}\t{b}\t{'entailment' if i % 2 else 'not_entailment'}\n"
                    for i, (a, b) in enumerate(zip(self.lines, self.lines[1:]))
                ),
            ),
        )

    def relation_source(self, source: dict[str, Any]) -> dict[str, Any]:
        """The source with its path (and images list, if it names one) replaced by fake files."""
        fmt = source.get("format")
        readers = {
            "snli": lambda: self.snli_folder(source.get("split", "train")),
            "nli-jsonl": self.nli_jsonl,
            "qqp": self.qqp,
            "text": self.text,
            "captions": self.captions,
            "paranmt": self.paraphrases,
            "qnli": self.qnli,
        }
        source = {**source, "path": str(readers[fmt]()), "cap": None}
        if source.get("images"):
            images = self.root / "images.txt"
            source["images"] = str(_write(images, "".join(f"{i}.jpg\n" for i in range(self.rows // 5))))
        return source


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


class TinyModels:
    """Tiny random start models by architecture, and tiny sentence-transformers folders standing in
    for the frozen encoders a preset names (RankEncoder's E1, RankCSE's teachers)."""

    def __init__(self, root: Path):
        self.root = root
        self._made: dict[str, Path] = {}

    def backbone(self, architecture: str) -> Path:
        if architecture not in self._made:
            self._made[architecture] = make_tiny_backbone(self.root / architecture, architecture=architecture)
        return self._made[architecture]

    def frozen_encoder(self, seed: int) -> Path:
        key = f"frozen-{seed}"
        if key not in self._made:
            from sentence_transformers import SentenceTransformer
            from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

            backbone = make_tiny_backbone(self.root / f"{key}-backbone", seed=seed, dropout=0.0)
            transformer = Transformer(str(backbone), max_seq_length=32)
            model = SentenceTransformer(modules=[transformer, Pooling(transformer.get_embedding_dimension())])
            model.save(str(self.root / key))
            self._made[key] = self.root / key
        return self._made[key]


def tiny_preset_tree(
    preset: Path, out: Path, data: FakeData, models: TinyModels, steps: int = 3, mixed_precision: str | None = None
) -> dict[str, Any]:
    """The preset's config tree, pointed at tiny models and fake data, ``steps`` steps of at most 8
    rows, no dev task; ``mixed_precision`` replaces the preset's own when given."""
    tree = copy.deepcopy(yaml.safe_load(preset.read_text("utf-8")))
    model = tree["model"]
    if model.get("random_init"):
        model["random_init"].update(
            layers=2, hidden_size=32, heads=2, intermediate_size=64, max_positions=64, vocab_size=200
        )
        model["max_seq_length"] = min(model.get("max_seq_length", 32), 32)
    else:
        model["name"] = str(models.backbone("roberta" if "roberta" in model["name"] else "bert"))
        model["max_seq_length"] = min(model.get("max_seq_length", 32), 32)
    method = tree["method"]
    data_section = tree.setdefault("data", {})
    section = tree.get("supervised", {})
    if section.get("format") == "snli":
        data_section["train"] = str(data.snli_folder(section.get("split", "train")))
    elif section.get("format") == "stsb":
        data_section["train"] = str(data.stsb_file())
    elif data_section.get("columns"):
        data_section["train"] = str(data.nli_csv(data_section["columns"]))
    elif method != "rse":  # RSE reads rse.sources (and refuses data.train)
        data_section["train"] = str(data.text())
    data_section.pop("limit", None)
    if method == "rse":
        tree["rse"]["sources"] = [data.relation_source(s) for s in tree["rse"]["sources"]]
    if tree["train"].get("mini_batch_size"):
        tree["train"]["mini_batch_size"] = 4
    if method == "rankencoder":
        tree["rank"].update(
            base_encoder=str(models.frozen_encoder(1)), corpus=str(data.text()), corpus_limit=None, encode_batch_size=64
        )
    if method == "rankcse":
        teachers = tree["rankcse"]["teachers"]
        tree["rankcse"].update(
            teachers=[str(models.frozen_encoder(1 + i)) for i in range(len(teachers))], encode_batch_size=64
        )
    if method == "mlm" and tree.get("mlm", {}).get("heldout_lines"):
        tree["mlm"].update(heldout_lines=20, heldout_limit=20)
    train = tree["train"]
    train.update(
        output_dir=str(out),
        batch_size=min(train.get("batch_size", 8), 8),
        max_steps=steps,
        logging_steps=1,
        progress_bar=False,
        eval_steps=100,
        save_steps=100,
    )
    if mixed_precision is not None:
        train["mixed_precision"] = mixed_precision
    tree["eval"] = {"dev_task": "none", "final_tasks": []}
    return tree
