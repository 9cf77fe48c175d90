"""sentlab: learn sentence embeddings with little or no labelled data, and measure them honestly.

Commands: train, pipeline, eval, encode, similarity, index, analyze, content-words, corpus-size, plot,
report, cache, data. Errors a user can fix (bad input, bad options) are printed as one line,
``sentlab: error: ...``, with a non-zero exit code.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from sentlab.errors import DataError, SentlabError
from sentlab.progress import bars, say, set_quiet


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block): ``sentlab train: error: ... (see --help)``."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

def _quiet_libraries() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def _model_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="alias (minilm), local folder, or hub name")
    parser.add_argument("--pooler", default=None, choices=("cls", "cls_before_pooler", "mean", "max",
                                                           "first_last_avg", "prompt"), help="override the model's pooler")
    parser.add_argument("--max-seq-length", type=_positive_int, default=None,
                        help="truncate inputs to N tokens (default: the model's own)")
    parser.add_argument("--batch-size", type=_positive_int, default=128, help="sentences encoded at a time "
                                                                              "(default: 128)")
    parser.add_argument("--device", type=_device, default=None, help="cpu, cuda, cuda:1, mps (default: best "
                                                                      "available)")
    _quiet_arg(parser)


def _backend_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=("torch", "onnx", "openvino"), default="torch",
                        help="inference runtime: torch, onnx (onnxruntime; pip install 'sentlab[onnx]') or openvino "
                             "(pip install 'sentlab[openvino]'); the export is made once and cached")
    parser.add_argument("--precision", choices=("fp32", "tf32", "fp16", "bf16", "int8"), default="fp32",
                        help="fp32 (IEEE float32 in every runtime and on every CPU); int8 (onnx / openvino: "
                             "dynamic quantisation); bf16 (torch, or openvino on a CPU with BF16); fp16 / tf32 "
                             "(torch, GPUs)")
    parser.add_argument("--no-cache", action="store_true",
                        help="do not read or write the embedding cache ($SENTLAB_CACHE, see `sentlab cache info`)")


def _allow_changed_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-changed-settings", action="store_true",
                        help="resume a run under settings it did not start with (the old config is kept in the "
                             "run folder as config.until-step-N.yaml)")


def _quiet_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help="no progress lines or bars (results only)")


def _device(value: str) -> str:
    """A device torch has here; a CUDA / MPS name on a machine without one is refused at parse time."""
    import torch

    kind, _, number = value.partition(":")
    if kind == "cpu" and not number:
        return value
    available = {"cuda": torch.cuda.device_count() if torch.cuda.is_available() else 0,
                 "mps": int(torch.backends.mps.is_available())}
    if kind not in available:
        raise argparse.ArgumentTypeError(f"unknown device {value!r} (cpu, cuda, cuda:N, mps)")
    if not available[kind]:
        raise argparse.ArgumentTypeError(f"device {value!r}: this torch has no {kind.upper()} device "
                                         f"(torch {torch.__version__}); use --device cpu")
    if number and (not number.isdigit() or int(number) >= available[kind]):
        raise argparse.ArgumentTypeError(f"device {value!r}: only {available[kind]} {kind} device(s)")
    return value


def _data_dir_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", default=None, help="default: $SENTLAB_DATA or ../shared/data")


def _figures_output_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", required=True, help="folder for the JSON and PNG files")


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return number


def _rank_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index", default=None, help="corpus index of the model (sentlab index build): score "
                                                      "with RankEncoder's Eq. 7")
    parser.add_argument("--lambda-inf", type=float, default=None,
                        help="Eq. 7 weight of the rank similarity: 1 = rank vectors alone (Eq. 2), 0 = cosine "
                             "(default: the RankEncoder folder's value, else 0.1 as in the paper)")


def _relation_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--relation", default=None, help="RSE model: score under this relation alone, or 'none' for "
                                                         "the plain cosine (default: the folder's saved weights)")
    parser.add_argument("--relation-weights", default=None, metavar="NAME=W,...",
                        help="RSE model: a weighted mix of relations, e.g. entailment=1,duplicate_question=0.5 "
                             "(normalised to sum to 1)")
    parser.add_argument("--direction", choices=("forward", "max"), default="forward",
                        help="RSE pair scores: forward = first sentence as the head (the paper), max = the larger "
                             "of both directions (the released code's STS scoring); retrieval is always forward")


def _relational(args: argparse.Namespace, encoder, source, name: str):
    """A :class:`RelationalScorer` for an RSE model folder (None for the plain cosine), from
    ``--relation`` / ``--relation-weights`` / ``--direction``."""
    from sentlab.evaluation.relational import RelationalScorer, RelationTable, parse_relation_weights

    relation, spec = getattr(args, "relation", None), getattr(args, "relation_weights", None)
    if relation is not None and spec is not None:
        raise SentlabError("give --relation or --relation-weights, not both")
    if relation == "none":
        return None
    if not RelationTable.is_saved_in(args.model):
        if relation is not None or spec is not None:
            raise SentlabError(f"--relation / --relation-weights need an RSE model folder; {args.model} has no "
                               "rse_relations.json")
        return None
    if getattr(args, "index", None) is not None:
        raise SentlabError("--index (RankEncoder) and an RSE model's relational score do not combine; "
                           "pass --relation none to score the encoder by cosine")
    table = RelationTable.load(args.model, encoder.get_embedding_dimension())
    weights = {relation: 1.0} if relation is not None else parse_relation_weights(spec) if spec else None
    scorer = RelationalScorer(source, table, weights, direction=args.direction, batch_size=args.batch_size)
    mix = ", ".join(f"{n}={w:.3g}" for n, w in zip(table.names, scorer.weights) if w)
    scorer.name = f"{name} (RSE {mix}, {args.direction})"
    return scorer


def _load(args: argparse.Namespace):
    from sentlab.encoders import load_encoder
    from sentlab.encoders.backends import accelerate, check_backend, pin_float32_math, require_extra

    backend, precision = getattr(args, "backend", "torch"), getattr(args, "precision", "fp32")
    check_backend(backend, precision, args.device)
    require_extra(backend)
    say(f"loading {args.model}")
    model = load_encoder(args.model, pooler=args.pooler, max_seq_length=args.max_seq_length, device=args.device)
    if (backend, precision) != ("torch", "fp32"):
        say(f"running the model with {backend} {precision}")
        accelerate(model, backend, precision)
    else:
        pin_float32_math()  # fp32 means IEEE fp32: no TF32 on GPUs, no bf16 on CPUs with AMX / AVX-512 BF16
    return model


def _embedding_cache(args: argparse.Namespace, encoder):
    """The in-process embedding cache, backed by the on-disk store unless --no-cache."""
    from sentlab.cache import EmbeddingStore
    from sentlab.evaluation.scoring import EmbeddingCache

    store = None if getattr(args, "no_cache", True) else EmbeddingStore.default()
    return EmbeddingCache(encoder, store=store)


def _setting_label(args: argparse.Namespace) -> str:
    """`` [onnx int8]`` after the model's name when it does not run as torch fp32 (results say so)."""
    from sentlab.encoders.backends import label

    text = label(getattr(args, "backend", "torch"), getattr(args, "precision", "fp32"))
    return f" [{text}]" if text else ""


def _index_of(args: argparse.Namespace, encoder):
    """(index, stored lambda_inf) for ``--index`` or a RankEncoder model folder, else (None, None);
    the index must have been built by ``encoder``."""
    from sentlab.rank.index import CorpusIndex
    from sentlab.rank.model import RankEncoder

    if getattr(args, "index", None) is not None:
        index = CorpusIndex.load(args.index)
        index.check_encoder(encoder)
        return index, None
    if RankEncoder.is_rankencoder(args.model):
        rank_encoder = RankEncoder.load(args.model, encoder=encoder)
        return rank_encoder.index, rank_encoder.lambda_inf
    return None, None


def _scorer(args: argparse.Namespace, name: str):
    """(encoder, embedding cache, scorer): cosine, RSE's relational score for an RSE folder, or Eq. 7
    for a RankEncoder folder / an encoder with ``--index``; the scorer encodes through the cache."""
    from sentlab.evaluation.scoring import CosineScorer
    from sentlab.rank.model import DEFAULT_LAMBDA_INF, RankScorer

    encoder = _load(args)
    name = name + _setting_label(args)
    cache = _embedding_cache(args, encoder)  # several task families share one encoding of each sentence
    relational = _relational(args, encoder, cache, name)
    if relational is not None:
        return encoder, cache, relational
    index, stored_lambda = _index_of(args, encoder)
    if index is None:
        if args.lambda_inf is not None:
            raise SentlabError("--lambda-inf needs --index or a RankEncoder model folder")
        return encoder, cache, CosineScorer(cache, batch_size=args.batch_size, name=name)
    lambda_inf = next(v for v in (args.lambda_inf, stored_lambda, DEFAULT_LAMBDA_INF) if v is not None)
    label = "rank vectors, Eq. 2" if lambda_inf == 1 else f"Eq. 7, lambda_inf={lambda_inf:g}"
    return encoder, cache, RankScorer(cache, index, lambda_inf, batch_size=args.batch_size, name=f"{name} ({label})")


def _train_overrides(args: argparse.Namespace) -> list[str]:
    """``--set`` values plus what ``--data-dir`` and ``--quiet`` mean for a training config."""
    overrides = list(args.set)
    if args.data_dir is not None:
        overrides.append(f"data.data_dir={args.data_dir}")
    if args.quiet:
        overrides.append("train.progress_bar=false")
    return overrides


def cmd_train(args: argparse.Namespace) -> int:
    from sentlab.evaluation.results import EvalReport
    from sentlab.training.config import load_config
    from sentlab.training.engine import train

    cfg = load_config(args.config, _train_overrides(args))
    paths = train(cfg, resume=args.resume, evaluate=not args.no_eval, allow_changed=args.allow_changed_settings)
    for results in (paths.results, paths.rank_results):  # cosine; Eq. 7 for RankEncoder runs
        if results.is_file():
            print(EvalReport.read(results).table())
    return 0


def cmd_pipeline(args: argparse.Namespace) -> int:
    """Train the configs in order; each stage after the first starts from the previous stage's model
    (its ``model.name`` is set to that run's ``model/``). A stage whose run folder already holds a
    final model is kept as it is, so re-running the command after a crash continues where it
    stopped (the interrupted stage with ``--resume``)."""
    from sentlab.training.config import load_config
    from sentlab.training.checkpoints import checkpoint_folders
    from sentlab.training.engine import RunPaths, train

    previous: Path | None = None
    for number, config in enumerate(args.configs, start=1):
        overrides = _train_overrides(args) + ([f"model.name={previous}"] if previous is not None else [])
        cfg = load_config(config, overrides)
        paths = RunPaths(Path(cfg.train.output_dir))
        if (paths.model / "modules.json").is_file():
            say(f"stage {number} ({config}): {paths.model} exists, kept")
        else:
            resume = bool(checkpoint_folders(paths.checkpoints))
            say(f"stage {number} ({config}): {cfg.method} from {cfg.model.name}" + (" (resumed)" if resume else ""))
            train(cfg, resume=resume, evaluate=not args.no_eval, allow_changed=args.allow_changed_settings)
        previous = paths.model
    print(previous)
    return 0


def cmd_adapt(args: argparse.Namespace) -> int:
    from sentlab.adapt import AdaptPlan, AdaptSettings, Budget, run_adapt
    from sentlab.cache import file_sha256

    budget = Budget(steps=args.steps, sentences=args.sentences, minutes=args.minutes)
    text = Path(args.text)
    if not text.is_file():
        raise DataError(f"{text}: file not found")
    for card in [*args.task_card, *([args.dev_card] if args.dev_card else [])]:
        if not Path(card).is_file():
            raise DataError(f"{card}: task card not found")
    settings = AdaptSettings(text=str(text), text_sha256=file_sha256(text), model=args.model,
                             pooler=None if args.pooler == "none" else args.pooler,
                             max_seq_length=args.max_seq_length, batch_size=args.batch_size,
                             budget={k: v for k, v in vars(budget).items()},
                             dev_card=str(Path(args.dev_card).resolve()) if args.dev_card else None,
                             general=args.general, data_dir=args.data_dir, eval_steps=args.eval_steps)
    plan = AdaptPlan(settings, [str(Path(c).resolve()) for c in args.task_card], args.methods.split(","),
                     args.seeds, Path(args.output), progress_bar=not args.quiet)
    run_adapt(plan)
    print((plan.output / "report.md").read_text("utf-8"), end="")
    print(f"written {plan.output / 'report.md'}, {plan.output / 'report.json'}, {plan.output / 'adapt.png'}")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from sentlab.evaluation import EvalReport
    from sentlab.evaluation.features import feature_function
    from sentlab.evaluation.suite import SuiteInputs, parse_families, run_families

    from sentlab.evaluation.task_cards import load_task_card, score_task_card

    cards = [load_task_card(path) for path in args.task_card]
    families = parse_families(args.tasks) if args.tasks is not None else [] if cards else ["sts"]
    encoder, cache, scorer = _scorer(args, args.model)
    features = feature_function(args.features, encoder, batch_size=args.batch_size,
                                encode=lambda sentences: cache.encode(list(sentences), batch_size=args.batch_size))
    inputs = SuiteInputs(scorer, features, args.data_dir, kfold=args.kfold, pair_features=args.pair_features,
                         n_jobs=args.jobs, device=encoder.device, items=args.items)
    report = EvalReport(model=scorer.name)
    if families:
        report = run_families(families, inputs, report)
    for card in cards:
        say(f"[task card] {card.name} ({card.kind})")
        report.tasks[card.name] = score_task_card(scorer, card, device=encoder.device)
        report.settings.setdefault("task_cards", {})[card.name] = str(card.folder)
    report.settings.update({"pooler": args.pooler, "max_seq_length": encoder.max_seq_length,
                            "backend": args.backend, "precision": args.precision,
                            "data_dir": str(args.data_dir or ""), "tasks": families})
    if "transfer" in families:
        report.settings.update({"features": args.features, "kfold": args.kfold, "pair_features": args.pair_features})
    if hasattr(scorer, "table"):
        report.settings.update({"relation_weights": dict(zip(scorer.table.names, scorer.weights.tolist())),
                                "direction": scorer.direction})
    if hasattr(scorer, "lambda_inf"):
        report.settings.update({"lambda_inf": scorer.lambda_inf, "index": str(args.index or args.model),
                                "corpus_size": len(scorer.index)})
    print(report.table())
    for card in cards:
        result = report.tasks[card.name]
        low_high = result.extra.get("ci95", {}).get(result.main_metric)
        if low_high:
            print(f"{card.name}: {result.main_metric} {result.main:.2f}, 95% CI [{low_high[0]:.2f}, {low_high[1]:.2f}] "
                  f"(bootstrap over its {result.n} items)")
    for task, reason in report.summary.get("skipped", {}).items():
        print(f"skipped {task}: {reason}")
    if args.output:
        report.write(args.output)
        print(f"results written to {args.output}")
    return 0


def cmd_encode(args: argparse.Namespace) -> int:
    import numpy as np

    from sentlab.data.readers import read_sentences

    sentences = read_sentences(args.input)
    out = Path(args.output)
    if out.suffix != ".npy":
        raise DataError(f"{out}: output must end in .npy")
    model = _load(args)
    say(f"encoding {len(sentences):,} sentences of {args.input}")
    embeddings = _embedding_cache(args, model).encode(sentences, batch_size=args.batch_size,
                                                      show_progress_bar=bars())
    if args.normalize:
        embeddings = embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-12)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.save(out, np.asarray(embeddings, dtype=np.float32))
    print(f"{len(sentences)} embeddings of dimension {embeddings.shape[1]} written to {out}")
    return 0


def cmd_similarity(args: argparse.Namespace) -> int:
    for i, sentence in enumerate((args.sentence1, args.sentence2), start=1):
        if not sentence.strip():
            raise DataError(f"sentence {i} is empty")
    scorer = _scorer(args, args.model)[2]
    if hasattr(scorer, "relation_scores"):  # RSE: every relation's score (Table 9), then the mix
        per_relation = scorer.relation_scores([args.sentence1], [args.sentence2])[0]
        width = max(len(n) for n in scorer.table.names)
        for relation, value in zip(scorer.table.names, per_relation):
            print(f"{relation:<{width}}  {value:.4f}")
        print(f"{'mix':<{width}}  {scorer.score([args.sentence1], [args.sentence2])[0]:.4f}  ({scorer.name})")
        return 0
    score = scorer.score([args.sentence1], [args.sentence2])[0]
    print(f"{score:.4f}")
    return 0


def _devices(value: str | None) -> list[str] | None:
    return [d.strip() for d in value.split(",") if d.strip()] if value else None


def cmd_index_build(args: argparse.Namespace) -> int:
    from sentlab.data.readers import read_sentences
    from sentlab.rank.index import CorpusIndex

    output = Path(args.output)
    if output.exists() and any(output.iterdir()) and not args.overwrite:
        raise DataError(f"{output}: already exists and is not empty; pass --overwrite to replace it")
    sentences = read_sentences(args.corpus, limit=args.limit)
    devices = _devices(args.devices)
    if devices and len(devices) > 1 and args.backend != "torch":
        raise SentlabError("--devices shards torch models only; drop --devices or use --backend torch")
    model = _load(args)
    say(f"encoding {len(sentences):,} corpus sentences of {args.corpus}")
    encode = None
    if not devices or len(devices) == 1:  # one device: through the embedding cache (reused by later runs)
        cache = _embedding_cache(args, model)
        encode = lambda texts: cache.encode(texts, batch_size=args.batch_size, show_progress_bar=bars())  # noqa: E731
    index = CorpusIndex.build(model, sentences, args.model + _setting_label(args), batch_size=args.batch_size,
                              devices=devices, show_progress_bar=bars(), encode=encode)
    index.extra.update({"corpus_file": str(args.corpus), "backend": args.backend, "precision": args.precision})
    index.save(args.output)
    print(f"index of {len(index)} sentences (dimension {index.dim}) written to {args.output}")
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    from sentlab.rank.analysis import analyze
    from sentlab.rank.model import RankEncoder

    encoder = _load(args)
    index, _ = _index_of(args, encoder)
    if index is None:
        raise SentlabError("analyze needs --index (or a RankEncoder model folder)")
    retrained = RankEncoder.load(args.retrained, device=args.device) if args.retrained else None
    written = analyze(encoder, index, args.output, args.data_dir, retrained)
    for name, path in written.items():
        print(f"{name}: {path}")
    return 0


def cmd_content_words(args: argparse.Namespace) -> int:
    """TSDAE Sec. 7.2: the most relevant word of each relevant pair (+ POS distribution if a tagger is installed)."""
    import json

    from sentlab.evaluation.content_words import content_words_report, plot_content_words
    from sentlab.evaluation.dev_tasks import relevant_pairs

    encoder = _load(args)
    pairs = relevant_pairs(args.pairs, args.data_dir, args.limit)
    say(f"{len(pairs):,} relevant pairs of {args.pairs}")
    report = content_words_report(_embedding_cache(args, encoder).encode, pairs, args.model + _setting_label(args))
    report["pairs_from"] = args.pairs
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    (out / "content_words.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    plot_content_words(report, out / "content_words.png")
    say(report["pos_note"])
    print(f"written {out / 'content_words.json'} (+ .png)")
    return 0


def cmd_corpus_size(args: argparse.Namespace) -> int:
    """TSDAE Sec. 7.1 / Fig. 3: train CONFIG on N sentences for each size, score each on a dev task."""
    import json

    from sentlab.training.corpus_size import corpus_size_curve

    result = corpus_size_curve(args.config, args.sizes, args.task, args.output, args.epochs, args.max_steps,
                               _train_overrides(args), args.data_dir)
    print(json.dumps(result["points"]))
    return 0


def cmd_plot_alignment_uniformity(args: argparse.Namespace) -> int:
    from sentlab.reporting.plots import alignment_uniformity_points, plot_alignment_uniformity

    path = plot_alignment_uniformity(alignment_uniformity_points(args.results), args.output)
    print(f"written {path} (+ .json)")
    return 0


def cmd_plot_cosine_buckets(args: argparse.Namespace) -> int:
    from sentlab.encoders import load_encoder
    from sentlab.evaluation.scoring import CosineScorer
    from sentlab.reporting.plots import cosine_by_gold_bucket, plot_cosine_buckets

    distributions = [cosine_by_gold_bucket(CosineScorer(load_encoder(name, device=args.device), name=name),
                                           args.data_dir) for name in args.model]
    path = plot_cosine_buckets(distributions, args.output)
    print(f"written {path} (+ .json)")
    return 0


def cmd_link_prediction(args: argparse.Namespace) -> int:
    import json

    from sentlab.data.relations import relation_counts
    from sentlab.evaluation.link_prediction import link_prediction
    from sentlab.evaluation.relational import RelationTable
    from sentlab.methods.rse import read_sources_file

    triples = read_sources_file(args.sources, args.cap, args.seed)
    say("held-out triples: " + ", ".join(f"{k} {v:,}" for k, v in relation_counts(triples).items()))
    encoder = _load(args)
    cache = _embedding_cache(args, encoder)
    dimension = encoder.get_embedding_dimension()
    if RelationTable.is_saved_in(args.model) and not args.zero_relations:
        table, label = RelationTable.load(args.model, dimension), "RSE relation vectors"
    else:
        table = RelationTable.zeros(list(dict.fromkeys(t.relation for t in triples)), dimension)
        label = "relation vectors 0 (plain cosine)"
    result = link_prediction(lambda texts: cache.encode(list(texts), batch_size=args.batch_size), table, triples,
                             candidates=args.candidates)
    print(f"{args.model}: {label}; candidates: {args.candidates}, filtered")
    print(f"{'relation':<20} {'n':>6} {'MR':>8} {'MRR':>6} {'H@1':>6} {'H@3':>6} {'H@10':>6}")
    for name, m in result.items():
        print(f"{name:<20} {m['n']:>6} {m['mr']:>8.1f} {m['mrr']:>6.3f} {m['hits@1']:>6.3f} {m['hits@3']:>6.3f} "
              f"{m['hits@10']:>6.3f}")
    if args.output:
        from sentlab.paths import write_text_atomic

        out = Path(args.output)
        payload = {"model": args.model, "scoring": label, "candidates": args.candidates, "filtered": True,
                   "cap": args.cap, "seed": args.seed, "sources": str(args.sources), "metrics": result}
        write_text_atomic(out, json.dumps(payload, indent=1) + "\n")  # a killed run leaves no half-written file
        print(f"results written to {out}")
    return 0


def cmd_plot_relations(args: argparse.Namespace) -> int:
    from sentlab.evaluation.relational import RelationTable
    from sentlab.reporting.plots import plot_relation_similarity

    if not RelationTable.is_saved_in(args.model):
        raise DataError(f"{args.model}: not an RSE model folder (no rse_relations.json)")
    table = RelationTable.load(args.model)
    similarity = table.similarity()
    width = max(len(n) for n in table.names)
    print(" " * width + "  " + " ".join(f"{n[:8]:>8}" for n in table.names))
    for name, row in zip(table.names, similarity):
        print(f"{name:<{width}}  " + " ".join(f"{v:8.3f}" for v in row))
    path = plot_relation_similarity(table.names, similarity, args.output, title=f"{args.model}: relation vectors")
    print(f"written {path} (+ .json)")
    return 0


def cmd_index_pack(args: argparse.Namespace) -> int:
    from sentlab.rank.model import RankEncoder

    encoder = _load(args)
    index, _ = _index_of(args, encoder)
    RankEncoder(encoder, index, args.lambda_inf).save(args.output)
    print(f"RankEncoder (lambda_inf {args.lambda_inf}) written to {args.output}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from sentlab.evaluation.results import EvalReport
    from sentlab.reporting.tables import plot_tables, render_markdown

    reports = [EvalReport.read(path) for path in args.results]
    markdown = render_markdown(reports, args.results)
    print(markdown, end="")
    if args.output:
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.md").write_text(markdown, encoding="utf-8")
        for path in plot_tables(reports, args.results, out):
            print(f"written {path} (+ .json)")
        print(f"written {out / 'report.md'}")
    return 0


def cmd_data_download(args: argparse.Namespace) -> int:
    import shutil

    from sentlab.data.hub import download_sts

    target = Path(args.target)
    existed = target.exists()
    try:
        written = download_sts(args.target)
    except BaseException:
        if not existed:  # nothing half-downloaded is left behind
            shutil.rmtree(target, ignore_errors=True)
        raise
    for name, count in written.items():
        print(f"{name}: {count} pairs")
    return 0


def cmd_cache_info(args: argparse.Namespace) -> int:
    from sentlab.cache import cache_info

    info = cache_info()
    print(f"cache folder: {info['root']} (embeddings capped at {info['max_bytes'] / 1e9:g} GB; "
          "$SENTLAB_CACHE, $SENTLAB_CACHE_MAX_GB)")
    print(f"embeddings: {info['embeddings']['entries']} entries, {info['embeddings']['bytes'] / 1e6:,.1f} MB")
    print(f"exports: {info['exports']['entries']} models, {info['exports']['bytes'] / 1e6:,.1f} MB"
          + "".join(f"\n  {setting}" for setting in info["exports"]["settings"]))
    return 0


def cmd_cache_clear(args: argparse.Namespace) -> int:
    from sentlab.cache import cache_clear, cache_root

    parts = [p for p, chosen in (("embeddings", args.embeddings), ("exports", args.exports)) if chosen] or \
        ["embeddings", "exports"]
    freed = cache_clear(what=parts)
    print(f"cleared {' and '.join(parts)} in {cache_root()} ({freed / 1e6:,.1f} MB)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from sentlab.adapt import GENERAL_TASKS

    from importlib.metadata import PackageNotFoundError, version

    try:
        sentlab_version = version("sentlab")
    except PackageNotFoundError:
        sentlab_version = "unknown"
    parser = _Parser(prog="sentlab", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"sentlab {sentlab_version}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("train", help="train an encoder from a YAML config")
    p.add_argument("config", metavar="CONFIG", help="YAML training config, e.g. configs/simcse-unsup-minilm-cpu.yaml "
                                                    "(methods and keys: see configs/ and the README)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set train.learning_rate=1e-5 (repeatable)")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint of the run")
    p.add_argument("--no-eval", action="store_true", help="skip the final STS evaluation")
    _allow_changed_arg(p)
    _data_dir_arg(p)
    _quiet_arg(p)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("pipeline", help="train several configs in a chain: each stage starts from the previous "
                                        "stage's model (e.g. TSDAE on your text, then NLI+STS)")
    p.add_argument("configs", nargs="+", metavar="CONFIG", help="YAML training configs, in order")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a value in every stage's config (repeatable)")
    p.add_argument("--no-eval", action="store_true", help="skip each stage's final STS evaluation")
    _allow_changed_arg(p)
    _data_dir_arg(p)
    _quiet_arg(p)
    p.set_defaults(func=cmd_pipeline)

    p = sub.add_parser("eval", help="evaluate an encoder")
    _model_args(p)
    _backend_args(p)
    _rank_args(p)
    _relation_args(p)
    p.add_argument("--tasks", default=None, help="comma-separated task families: sts, ranking, transfer, useb, "
                                                 "evalrank, or all (tasks without data are skipped and listed); "
                                                 "default sts, or none when --task-card is given")
    p.add_argument("--task-card", action="append", default=[], metavar="CARD.yaml",
                   help="your own task declared as data: scored-pairs, labelled-pairs, retrieval (BEIR layout), "
                        "reranking or classification; repeatable (see sentlab.evaluation.task_cards)")
    p.add_argument("--output", default=None, help="write the results as JSON here")
    p.add_argument("--items", action="store_true",
                   help="keep in --output what each sts / ranking / useb headline is computed from (scored pairs, "
                        "per-query values), for intervals and paired comparisons in sentlab report")
    p.add_argument("--features", default="sentence", help="transfer-task features: sentence (the embedding) or "
                                                          "cls-lastK, e.g. cls-last5 (RSE: mean [CLS] of the last 5 "
                                                          "layers)")
    p.add_argument("--kfold", type=_positive_int, default=10, help="transfer-task folds (SentEval; papers use 10)")
    p.add_argument("--pair-features", choices=("senteval", "full"), default="senteval",
                   help="MRPC features: senteval = [|u-v|, u*v] (SentEval's mrpc.py), full = [u, v, |u-v|, u*v]")
    p.add_argument("--jobs", type=int, default=None, help="parallel classifier fits (joblib; -1 = all cores)")
    _data_dir_arg(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("adapt", help="adapt a model to your unlabelled text with every applicable method under one "
                                     "budget, score each on your task card(s) and STS, and recommend one")
    p.add_argument("--text", required=True, help="unlabelled in-domain text, one sentence a line")
    p.add_argument("--task-card", action="append", required=True, metavar="CARD.yaml",
                   help="your task (test); the first one decides the recommendation; repeatable")
    p.add_argument("--dev-card", default=None, metavar="CARD.yaml",
                   help="a small labelled dev task: each arm keeps its best checkpoint on it (default: final model)")
    p.add_argument("--output", required=True, help="the adapt folder (rerun the command to resume)")
    p.add_argument("--model", default="minilm", help="the start model (alias, folder or hub name)")
    p.add_argument("--pooler", default="mean", help="pooling of every arm (default mean; 'none': as saved)")
    p.add_argument("--methods", default="tsdae,ct,mlm,simcse,bert-flow",
                   help="comma-separated arms (default: all of tsdae, ct, mlm, simcse, bert-flow); ARM@LR is that "
                        "arm at another learning rate, its own row (e.g. bert-flow@1e-4)")
    budget = p.add_mutually_exclusive_group(required=True)
    budget.add_argument("--steps", type=_positive_int, help="budget: optimizer steps per arm")
    budget.add_argument("--sentences", type=_positive_int, help="budget: training sentences per arm")
    budget.add_argument("--minutes", type=float, help="budget: wall-clock minutes of training per arm")
    p.add_argument("--batch-size", type=_positive_int, default=8, help="every arm's batch size (default 8, TSDAE's)")
    p.add_argument("--max-seq-length", type=_positive_int, default=128)
    p.add_argument("--seeds", type=int, nargs="+", default=[42, 43, 44],
                   help="training seeds of every arm (default 42 43 44; with one, training randomness is not measured "
                        "and no margin is called beyond the noise)")
    p.add_argument("--general", choices=tuple(GENERAL_TASKS), default="sts-b",
                   help="the general task that shows what adapting traded: STS-B test (default), the seven STS "
                        "tasks' average, or none")
    p.add_argument("--eval-steps", type=_positive_int, default=100,
                   help="checkpoint (and dev-card evaluation) every N steps (default 100)")
    _data_dir_arg(p)
    _quiet_arg(p)
    p.set_defaults(func=cmd_adapt)

    p = sub.add_parser("encode", help="embed a text file (one sentence a line) into a .npy matrix")
    _model_args(p)
    _backend_args(p)
    p.add_argument("--input", required=True, help="UTF-8 text file, one sentence a line")
    p.add_argument("--output", required=True, help="the .npy file to write (float32, one row a sentence)")
    p.add_argument("--normalize", action="store_true", help="L2-normalise the embeddings")
    p.set_defaults(func=cmd_encode)

    p = sub.add_parser("similarity", help="similarity of two sentences (cosine, Eq. 7 with an index, every relation's "
                                          "score for an RSE model)")
    _model_args(p)
    _backend_args(p)
    _rank_args(p)
    _relation_args(p)
    p.add_argument("sentence1")
    p.add_argument("sentence2")
    p.set_defaults(func=cmd_similarity)

    p = sub.add_parser("link-prediction", help="RSE App. B: rank each held-out triple's tail given head + relation "
                                               "(MR, MRR, Hits@1/3/10 per relation)")
    _model_args(p)
    _backend_args(p)
    p.add_argument("--sources", required=True, help="YAML with 'sources:', a list of {relation, path, format, ...} "
                                                    "as in rse.sources (e.g. configs/link-prediction/rse-heldout.yaml)")
    p.add_argument("--cap", type=_positive_int, default=2000, help="a seeded random sample of at most N triples per "
                                                                   "source (default 2000, as App. B)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--candidates", choices=("split", "relation"), default="split",
                   help="split = every tail of the held-out set (default), relation = the relation's tails")
    p.add_argument("--zero-relations", action="store_true", help="score an RSE model with every relation vector 0")
    p.add_argument("--output", default=None, help="write the metrics as JSON here")
    p.set_defaults(func=cmd_link_prediction)

    p = sub.add_parser("index", help="RankEncoder corpus indexes")
    index_sub = p.add_subparsers(dest="index_command", required=True)
    i = index_sub.add_parser("build", help="encode a corpus once with a base encoder")
    _model_args(i)
    _backend_args(i)
    i.add_argument("--corpus", required=True, help="text file, one sentence a line")
    i.add_argument("--limit", type=_positive_int, default=None, help="use the first N lines")
    i.add_argument("--output", required=True, help="index folder to write")
    i.add_argument("--devices", default=None, help="shard encoding over these devices, e.g. cuda:0,cuda:1")
    i.add_argument("--overwrite", action="store_true", help="replace an existing index folder")
    i.set_defaults(func=cmd_index_build)
    i = index_sub.add_parser("pack", help="save an encoder + its index + lambda_inf as one RankEncoder folder")
    _model_args(i)
    i.add_argument("--index", required=True, help="the encoder's corpus index (sentlab index build)")
    i.add_argument("--lambda-inf", type=float, default=0.1, help="Eq. 7 weight stored with the folder (default: "
                                                                  "0.1, the paper's)")
    i.add_argument("--output", required=True, help="the RankEncoder folder to write")
    i.set_defaults(func=cmd_index_pack)

    p = sub.add_parser("analyze", help="RankEncoder's analyses: similar pairs, overlapping neighbours, "
                                       "rank-vector geometry, 2-D map (JSON + PNG)")
    _model_args(p)
    p.add_argument("--index", default=None, help="corpus index of --model")
    p.add_argument("--retrained", default=None, help="a re-trained RankEncoder folder (E2) to add to Table 5")
    _figures_output_arg(p)
    _data_dir_arg(p)
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser("content-words", help="TSDAE Sec. 7.2: which word of a relevant pair matters most "
                                             "(JSON + PNG; POS distribution when spaCy is installed)")
    _model_args(p)
    p.add_argument("--pairs", default="twitterpara", help="relevant pairs: twitterpara, sts-b (dev, score >= 4) or "
                                                          "cqadupstack:<forum>")
    p.add_argument("--limit", type=_positive_int, default=2000, help="a seeded sample of this many pairs")
    p.add_argument("--output", required=True, help="folder for content_words.json and .png")
    _data_dir_arg(p)
    p.set_defaults(func=cmd_content_words)

    p = sub.add_parser("corpus-size", help="TSDAE Sec. 7.1: train a config on 128 ... 65,536 sentences and score "
                                           "each model on a dev task (JSON + PNG)")
    p.add_argument("config", metavar="CONFIG")
    p.add_argument("--sizes", type=lambda v: [int(x) for x in v.split(",")], default=None,
                   help="comma-separated corpus sizes (default: the paper's 128, 256, ..., 65536)")
    p.add_argument("--task", default="sts-b", help="dev task: sts-b, twitterpara, cqadupstack:<forum> or a task card (.yaml)")
    p.add_argument("--epochs", type=float, default=10.0, help="epochs over each corpus (the paper: 10)")
    p.add_argument("--max-steps", type=_positive_int, default=100_000, help="step cap (the paper: 100k)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override (repeatable)")
    p.add_argument("--output", required=True)
    _data_dir_arg(p)
    _quiet_arg(p)
    p.set_defaults(func=cmd_corpus_size)

    p = sub.add_parser("plot", help="figures with the numbers behind them (PNG + JSON)")
    plot_sub = p.add_subparsers(dest="plot_command", required=True)
    f = plot_sub.add_parser("alignment-uniformity", help="RankCSE Fig. 3: models on the alignment-uniformity plane")
    f.add_argument("results", nargs="+", help="results files of `sentlab eval --tasks sts --output`")
    _figures_output_arg(f)
    f.set_defaults(func=cmd_plot_alignment_uniformity)
    f = plot_sub.add_parser("relations", help="RSE Fig. 4: cosine similarity between an RSE model's relation vectors")
    f.add_argument("--model", required=True, help="an RSE model folder")
    _figures_output_arg(f)
    f.set_defaults(func=cmd_plot_relations)
    f = plot_sub.add_parser("cosine-buckets", help="RankCSE Fig. 4: cosine per gold-score bucket, STS-B dev")
    f.add_argument("--model", action="append", required=True, help="repeat for several models")
    f.add_argument("--device", default=None)
    _figures_output_arg(f)
    _data_dir_arg(f)
    f.set_defaults(func=cmd_plot_cosine_buckets)

    p = sub.add_parser("report", help="paper-style Markdown tables (STS, transfer, USEB, EvalRank) and bar charts "
                                      "from results files")
    p.add_argument("results", nargs="+", help="results files of `sentlab eval --output` (one model each)")
    p.add_argument("--output", default=None, help="folder for report.md and the bar charts (PNG + JSON)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("cache", help="the embedding cache and exported models ($SENTLAB_CACHE, "
                                     "default ~/.cache/sentlab)")
    cache_sub = p.add_subparsers(dest="cache_command", required=True)
    c = cache_sub.add_parser("info", help="where the cache is, its size and cap, the exported models")
    c.set_defaults(func=cmd_cache_info)
    c = cache_sub.add_parser("clear", help="delete cached embeddings and exports (both unless one is named)")
    c.add_argument("--embeddings", action="store_true", help="only the embedding entries")
    c.add_argument("--exports", action="store_true", help="only the exported models")
    c.set_defaults(func=cmd_cache_clear)

    p = sub.add_parser("data", help="data utilities")
    data_sub = p.add_subparsers(dest="data_command", required=True)
    d = data_sub.add_parser("download", help="fetch the STS sets from the datasets hub (needs internet)")
    d.add_argument("--target", required=True, help="folder to write the SentEval layout into")
    d.set_defaults(func=cmd_data_download)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    set_quiet(getattr(args, "quiet", False))
    if getattr(args, "quiet", False):  # read by tqdm when first imported: also the libraries' own bars
        os.environ.setdefault("TQDM_DISABLE", "1")
    say(f"sentlab {args.command}: loading libraries")
    _quiet_libraries()
    try:
        return args.func(args)
    except SentlabError as err:
        print(f"sentlab: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("sentlab: interrupted (resume a training run with --resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
