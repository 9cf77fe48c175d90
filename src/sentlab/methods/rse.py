"""RSE, relational sentence embedding (Wang and Li): one encoder and one vector per relation, trained
so that h_i + r_k ≈ h_j on triples from several sources (Sec. 3; loss :class:`sentlab.losses.rse.RSELoss`,
Eq. 1-2, with in-relation negatives drawn afresh each read, Sec. 3.3).

Settings from App. D: [CLS] with RSE's MLP (Linear + tanh, kept at inference: the saved model is
encoder + pooling + Dense), τ = 0.05, max length 32, relation vectors randomly initialised and
trained with their own learning rate (``rse.relation_lr``, 1e-2) as a separate parameter group, no
warm-up or weight decay. ``rse.sources`` names each source file, its format and its relation
(:mod:`sentlab.data.relations`); ``cap`` keeps a seeded random sample of that many triples.

``train.mini_batch_size`` trains with Gradient Cache (Sec. 3.3;
:class:`sentlab.losses.gradcache.GradientCache`): the batch is embedded that many rows at a time, so
batch 512 trains in the memory of the chunk. ``rse.merge_relations`` is the "All-Above" baseline of
Table 1: every source merged into plain positive pairs, no relation vectors, no in-relation
negatives - supervised SimCSE on the same data, to test whether modelling the relations helps.

The final model folder is a plain sentence-transformers model plus the relation table beside it:
``rse_relations.json`` (names, default scoring weights) and ``rse_relations.safetensors``
(the vectors), written and read by :class:`sentlab.evaluation.relational.RelationTable`, which scores
with it. An "All-Above" run saves no table. Checkpoints are selected on STS-B dev scored with the
relational mix of the saved weights (:class:`RelationalDevEvaluator`), and the relation vectors of
the selected checkpoint are the ones saved.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
from datasets import Dataset
from pydantic import Field
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator
from torch import nn

from sentlab.cache import cache_root, evict_cache, file_state
from sentlab.data import relations as rel
from sentlab.data.tables import iter_column, sentence_table
from sentlab.errors import ConfigError, DataError
from sentlab.evaluation.relational import RelationTable
from sentlab.losses.rse import RSELoss
from sentlab.methods.base import Method, register
from sentlab.progress import say
from sentlab.training.config import DataSection, TrainConfig, _Section


class RelationSource(_Section):
    relation: Literal["entailment", "duplicate_question", "paraphrase", "same_caption", "qa_entailment", "same_sent"]
    path: str
    format: Literal["snli", "nli-jsonl", "qqp", "paranmt", "captions", "qnli", "text", "rse-json"]
    split: str = Field("train", description="snli: the split of the SentEval layout")
    images: str | None = Field(None, description="captions: keep only the images listed in this file")
    cap: int | None = Field(None, gt=0, description="a seeded random sample of at most this many triples")
    bad_bytes: Literal["error", "skip"] = "error"


class RSESection(_Section):
    sources: list[RelationSource] = Field(min_length=1)
    relation_lr: float = Field(1e-2, gt=0, description="learning rate of the relation vectors (App. D)")
    weights: dict[str, float] = Field(
        default_factory=dict,
        description="default scoring weights saved with the model (e.g. entailment 1.0, duplicate_question 0.5)",
    )
    merge_relations: bool = Field(False, description="the All-Above baseline: plain positive pairs, no relations")
    dev_direction: Literal["forward", "max"] = Field(
        "forward",
        description="checkpoint selection on the dev task: forward = f(s1, s2, r) with the first "
        "sentence as the head (the paper's definition, Sec. 3); max = the larger of both "
        "directions, as the released code scores STS-B dev",
    )


class RSEData(DataSection):
    train: str = Field("", description="unused by RSE: rse.sources names the data")
    train_required: ClassVar[bool] = False


class RSEConfig(TrainConfig):
    method: Literal["rse"]
    data: RSEData = Field(default_factory=RSEData)
    rse: RSESection

    section = "rse"
    section_hint = "rse.sources: [{relation, path, format}, ...]"
    not_read = {
        "data.train": "its data are rse.sources",
        "data.columns": "its data are rse.sources",
        "loss.hard_negative_weight": "its relations and their weights are rse.sources and rse.weights",
    }


def read_source(source: RelationSource) -> list[rel.Triple]:
    if source.format == "rse-json":
        triples = [t for t in rel.read_rse_json(source.path) if t.relation == source.relation]
    elif source.format in ("snli", "nli-jsonl"):
        triples = rel.read_entailment(source.path, source.split)
    elif source.format == "qqp":
        triples, skipped = rel.read_qqp(source.path, source.bad_bytes)
        if skipped:
            say(f"{source.path}: {skipped} lines with bytes that are not UTF-8 skipped")
    elif source.format == "paranmt":
        triples = rel.read_paranmt(source.path)
    elif source.format == "captions":
        triples = rel.read_captions(source.path, source.images)
    elif source.format == "qnli":
        triples = rel.read_qnli(source.path)
    else:
        triples = rel.read_same_sent(source.path)
    for number, t in enumerate(triples):  # relabelled in place: no second list of the source
        triples[number] = rel.Triple(t.head, source.relation, t.tail, t.negative)
    return triples


def iter_sources(sources: list[RelationSource], seed: int, cap: int | None = None) -> Iterator[rel.Triple]:
    """Every source's triples, one source after another, each capped to a seeded random sample (``cap``,
    else its own ``cap``; source k draws with ``seed + k``). A source is read only when the ones before
    it are used up: a plain text's sentences stream from its memory-mapped table, the labelled formats
    are read a file at a time."""
    for number, source in enumerate(sources):
        limit = cap or source.cap
        if source.format == "text":  # plain text of any size: its memory-mapped table, a row at a time
            table = sentence_table(source.path)
            if limit and limit < len(table):  # the rows cap_per_relation keeps, drawn the same way
                rows = sorted(random.Random(seed + number).sample(range(len(table)), limit))
                table = table.select(
                    rows, keep_in_memory=True
                )  # the indices in memory: nothing written beside a cached table
            yield from (rel.Triple(s, source.relation, s) for s in iter_column(table))
            continue
        read = read_source(source)
        yield from rel.cap_per_relation(read, {source.relation: limit}, seed=seed + number) if limit else read
        del read  # before the next source is read, not after: one source's list at a time


def read_sources(sources: list[RelationSource], seed: int, cap: int | None = None) -> list[rel.Triple]:
    """:func:`iter_sources` as a list (held-out triples: a few thousand a relation)."""
    return list(iter_sources(sources, seed, cap))


def _path_state(path: str) -> object:
    """What identifies a source's content cheaply (:func:`sentlab.cache.file_state`; a folder's files')."""
    target = Path(path)
    if target.is_dir():
        return [[item.name, _path_state(str(item))] for item in sorted(target.iterdir()) if item.is_file()]
    if not target.exists():
        raise DataError(f"{target}: file not found")
    return file_state(target)


def sources_state(sources: list[RelationSource]) -> list:
    return [[_path_state(s.path), None if s.images is None else _path_state(s.images)] for s in sources]


def read_sources_file(
    path: str | Path, cap: int | None, seed: int, data_folder: str | Path | None = None
) -> list[rel.Triple]:
    """Held-out triples from a YAML ``sources:`` list (the keys of ``rse.sources``; a file, or a packaged
    one by name, e.g. ``link-prediction/rse-heldout``), each source capped to a seeded random sample
    of ``cap`` triples (App. B samples 2,000 per relation). ``$SENTLAB_DATA/`` paths are read from
    ``data_folder`` (default: :func:`sentlab.paths.data_dir`)."""
    import yaml
    from pydantic import ValidationError

    from sentlab.data.sources import missing_data_message
    from sentlab.paths import data_dir, expand_data_paths
    from sentlab.presets import packaged_file

    path = Path(path)
    if not path.is_file():
        path = packaged_file(str(path)) or path
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    try:
        tree = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not valid YAML ({str(err).splitlines()[0]})") from None
    if not isinstance(tree, dict) or not isinstance(tree.get("sources"), list) or not tree["sources"]:
        raise DataError(f"{path}: expected 'sources:' with a list of {{relation, path, format}}")
    root = data_dir(data_folder)
    for used in expand_data_paths(tree, root):
        if not used.exists():
            raise DataError(missing_data_message(used, root))
    sources = []
    for number, entry in enumerate(tree["sources"]):
        try:
            sources.append(RelationSource.model_validate(entry))
        except ValidationError as err:
            first = err.errors()[0]
            raise DataError(f"{path}: sources[{number}].{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    return read_sources(sources, seed, cap)


@register
class RSE(Method):
    """Relational contrastive learning over multi-source triples."""

    name = "rse"
    in_batch_negatives = True
    no_adapter = "RSE saves its relation vectors beside the encoder, which merging an adapter would leave behind"
    no_matryoshka = (
        "RSE adds relation vectors to the embeddings as they are, and Matryoshka's truncation re-normalises them, "
        "which changes the loss at every dimension"
    )
    no_gradient_cache = None  # the loss compares the batch's rows: train.mini_batch_size applies
    # cos(h + r, h'): the relation vectors were learnt beside the embeddings as the trained pipeline gives
    # them; a Normalize module appended at saving would shrink h to length 1 and leave r as it was
    keeps_start_normalize = False
    batch_columns = 3  # head, tail, negative
    rows_drawn_on_read = True  # each read draws the row's in-relation negative anew (InRelationNegatives)
    config_class = RSEConfig
    default_mlp_only_train = False  # RSE's MLP stays at inference

    def relations(self) -> list[str]:
        return list(dict.fromkeys(source.relation for source in self.cfg.rse.sources))

    def train_dataset(self) -> Dataset:
        """The sources' triples as a memory-mapped table (:func:`sentlab.data.relations.triples_table`),
        cached under ``$SENTLAB_CACHE/rse/`` by the sources, their files' state, the seed and
        ``data.limit`` (which stops reading once it has that many triples)."""
        unknown = set(self.cfg.rse.weights) - set(self.relations())
        if unknown:
            raise ConfigError(f"rse.weights names relations without data: {', '.join(sorted(unknown))}")
        sources, seed, limit = self.cfg.rse.sources, self.cfg.train.seed, self.cfg.data.limit
        state = sources_state(sources)
        key = {
            "format": rel.TRIPLES_FORMAT,
            "sources": [source.model_dump() for source in sources],
            "state": state,
            "seed": seed,
            "limit": limit,
            "relations": self.relations(),
        }
        # the sources' state is part of the folder's name: a changed source is a new folder (the training
        # of another run may still read the old one's triples by path; the cache's cap evicts it later)
        named = json.dumps(key, sort_keys=True)
        folder = cache_root() / "rse" / hashlib.sha256(named.encode()).hexdigest()[:24]

        def unchanged() -> None:
            changed = [s.path for s, before, now in zip(sources, state, sources_state(sources)) if before != now]
            if changed:
                raise DataError(f"{changed[0]}: changed while it was being read; run again once the file is complete")

        table, record = rel.triples_table(
            lambda: itertools.islice(iter_sources(sources, seed), limit),
            self.relations(),
            folder,
            key,
            unchanged,
            after_build=lambda built: evict_cache(keep=[built]),
        )
        counts = record["counts"]
        say("relational triples: " + ", ".join(f"{name} {counts.get(name, 0):,}" for name in self.relations()))
        if self.cfg.rse.merge_relations:
            say("All-Above baseline: the sources merged into plain positive pairs")
            pairs = table.select_columns(["head", "tail"])  # one byte a row: one relation, label 0
            return pairs.add_column("label", np.zeros(len(pairs), dtype=np.int8))
        return rel.with_in_relation_negatives(table, seed)

    def loss(self, model: SentenceTransformer) -> nn.Module:
        r = self.cfg.rse
        options = dict(temperature=self.cfg.loss.temperature, learn_relations=not r.merge_relations)
        self._loss = RSELoss(model, self.relations(), **options)
        return self._loss

    def learning_rate_mapping(self) -> dict[str, float]:
        return {} if self.cfg.rse.merge_relations else {r"relation_vectors": self.cfg.rse.relation_lr}

    def default_weights(self) -> dict[str, float]:
        return self.cfg.rse.weights or {self.relations()[0]: 1.0}

    def dev_evaluator(self, evaluator, loss: nn.Module):
        from sentlab.evaluation.task_cards import TaskCardEvaluator

        if evaluator is None or self.cfg.rse.merge_relations:
            return evaluator
        if isinstance(evaluator, TaskCardEvaluator):  # the user's dev card, scored relationally
            from sentlab.evaluation.relational import RelationalScorer

            weights, direction = self.default_weights(), self.cfg.rse.dev_direction
            return evaluator.scored_by(
                lambda model: RelationalScorer(
                    model,
                    RelationTable(loss.relations, loss.relation_vectors.detach().float().cpu().numpy(), weights),
                    direction=direction,
                )
            )
        return RelationalDevEvaluator(
            evaluator, loss, weights=self.default_weights(), direction=self.cfg.rse.dev_direction
        )

    def save(self, model: SentenceTransformer) -> None:
        super().save(model)
        if self.cfg.rse.merge_relations:
            return
        vectors = self._loss.relation_vectors.detach().float().cpu().numpy()
        RelationTable(self.relations(), vectors, self.default_weights()).save(self.paths.model)


class RelationalDevEvaluator(SentenceEvaluator):
    """STS-B dev scored with RSE's relational mix (the saved default weights) of the relation vectors
    being trained, for checkpoint selection as the paper selects (App. D, with its scoring):
    ``direction`` forward (the paper's f(s1, s2, r), the default) or max (both directions' larger
    score, the released code's STS-B dev scoring; ``rse.dev_direction``). Wraps the engine's
    ``EmbeddingSimilarityEvaluator`` (its pairs and gold scores) and reports under the same metric
    name, ``<name>_spearman_cosine``, so the engine's model selection reads it."""

    def __init__(self, base, loss: RSELoss, weights: dict[str, float], direction: str = "forward"):
        super().__init__()
        self.base, self.loss, self.weights, self.direction = base, loss, weights, direction
        self.name = base.name
        self.primary_metric = "spearman_cosine"

    def __call__(self, model, output_path=None, epoch: int = -1, steps: int = -1) -> dict[str, float]:
        from scipy.stats import spearmanr

        from sentlab.evaluation.relational import RelationalScorer

        vectors = self.loss.relation_vectors.detach().float().cpu().numpy()
        scorer = RelationalScorer(
            model, RelationTable(self.loss.relations, vectors, self.weights), direction=self.direction
        )
        predicted = scorer.score(self.base.sentences1, self.base.sentences2)
        metrics = self.prefix_name_to_metrics(
            {"spearman_cosine": float(spearmanr(self.base.scores, predicted)[0])}, self.name
        )
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics
