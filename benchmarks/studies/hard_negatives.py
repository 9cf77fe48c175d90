"""What hard negatives give when fine-tuning all-MiniLM-L6-v2 on labelled pairs: the ``supervised``
method's MultipleNegativesRankingLoss trained with (a) in-batch negatives only, (b) the data's own
negatives where it has them, (c) negatives mined by ``sentlab mine`` with the start model, each over
the same seeds by ``sentlab compare`` (baseline: (a)), every kept model scored on STS and on QQP
duplicate-question retrieval. Prints one JSON object.

Feeds: records hard-negatives-minilm; pages docs/results.md.

    python -m benchmarks.studies.hard_negatives --output runs/hard-negatives --seeds 1 2 3

Training data (``$SENTLAB_DATA``). A pair with a text that is also a scored text (STS's test sets,
compared blind to case, spacing and punctuation) or a question of the QQP card is dropped and counted:
Flickr8k's captions and SNLI's sentences recur in STS12-16 and STS-B.

* ``qqp``: QQP dev's duplicate pairs. Its non-duplicate pairs share a question with a duplicate pair
  too rarely to give each anchor a negative, so QQP has no (b).
* ``flickr8k``: two captions of one image, one pair per training image (Flickr_8k.trainImages). No (b).
* ``snli``: SNLI dev's (premise, entailment, contradiction) triplets; (b) is the contradiction.

Every kind of negative trains on the same (anchor, positive) rows: those the mining found a negative
for. Scoring: STS (the seven tasks' average) and the task card ``qqp-duplicates`` written here from QQP
test: each duplicate pair's first question is a query, its duplicate the relevant document, among
every other test question (queries' own texts left out of the corpus); MAP@100 is its headline.
all-MiniLM-L6-v2 itself was trained on Quora duplicates, SNLI / MultiNLI and Flickr30k captions
(its model card): the start model has seen these kinds of data, and the comparison is of fine-tuning
it further, not of a model new to them. Settings shared by every run: batch 64, one epoch, learning
rate 2e-5 with 10 % warm-up, length 64, fp32, ``train.no_duplicates`` (a text twice in a batch would
be its own false negative), no dev selection (the final model is scored). Mining: ``sentlab mine``
defaults (one negative a pair, the top candidate below NV-Retriever's relative margin 0.05,
candidates: the pairs' positives), with the start model.

Files already made are reused only when what they were made from is unchanged (the start model's
scores per card content, the mined triplets per pairs file), and ``sentlab compare`` reuses a
finished seed only for the same config, data and card files.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from collections import Counter
from pathlib import Path

from benchmarks.common import sentlab

SETTINGS = {
    "method": "supervised",
    "model": {"name": "minilm", "max_seq_length": 64},
    "supervised": {"loss": "mnrl", "format": "table"},
    "train": {
        "mixed_precision": "no",
        "batch_size": 64,
        "learning_rate": 2.0e-5,
        "epochs": 1,
        "warmup_ratio": 0.1,
        "no_duplicates": True,
        "progress_bar": False,
    },
    "eval": {"dev_task": "none", "final_tasks": []},
}


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def qqp_card(data: Path, folder: Path, queries: int, seed: int) -> tuple[Path, dict]:
    """The QQP test duplicate-retrieval card (BEIR layout) in ``folder``."""
    from sentlab.data.relations import numbered_lines, tab_fields

    path = data / "relations" / "qqp" / "test.tsv"
    lines, skipped = numbered_lines(path, bad_bytes="skip")  # QQP's dump has a few lines that are not UTF-8
    rows = [tab_fields(path, number, line, 3)[:3] for number, line in lines]
    relevant: dict[str, set[str]] = {}
    for label, q1, q2 in rows:
        if label == "1" and q1 != q2:
            relevant.setdefault(q1, set()).add(q2)
    chosen = sorted(relevant)
    random.Random(seed).shuffle(chosen)
    chosen = set(chosen[:queries])
    texts = sorted({q for _, q1, q2 in rows for q in (q1, q2)} - chosen)
    ids = {text: f"d{i}" for i, text in enumerate(texts)}
    query_rows, qrels = [], []
    for number, query in enumerate(sorted(chosen)):
        hits = [ids[t] for t in sorted(relevant[query]) if t in ids]
        if hits:
            query_rows.append({"_id": f"q{number}", "text": query})
            qrels += [f"q{number}\t{hit}\t1" for hit in hits]
    folder.mkdir(parents=True, exist_ok=True)
    write_jsonl(folder / "corpus.jsonl", [{"_id": ids[t], "text": t} for t in texts])
    write_jsonl(folder / "queries.jsonl", query_rows)
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(qrels) + "\n", encoding="utf-8")
    card = folder / "qqp-duplicates.yaml"
    card.write_text(
        "name: qqp-duplicates\nkind: retrieval\ncorpus: corpus.jsonl\nqueries: queries.jsonl\nqrels: qrels.tsv\nmain_metric: map@100\n",
        encoding="utf-8",
    )
    return card, {"queries": len(query_rows), "corpus": len(texts), "relevant": len(qrels), "skipped_lines": skipped}


def scored_texts(data: Path, card: Path) -> set[str]:
    """Every text a model is scored on (STS's test sets, the card's queries and corpus), compared
    blind to case, spacing and punctuation."""
    from sentlab.data.sts import STS_TASKS, load_sts_task
    from sentlab.mining import same_text_key

    texts = [json.loads(line)["text"] for name in ("corpus", "queries") for line in open(card.parent / f"{name}.jsonl", encoding="utf-8")]  # fmt: skip
    for task in STS_TASKS:
        pairs = load_sts_task(task, data)
        texts += [*pairs.sentences1, *pairs.sentences2]
    return {same_text_key(text) for text in texts}


def training_rows(name: str, data: Path, seed: int) -> tuple[list[dict], dict]:
    """(anchor, positive[, negative]) rows of one training set, and what was read."""
    if name == "qqp":
        from sentlab.data.relations import read_qqp

        duplicates, skipped = read_qqp(data / "relations" / "qqp" / "dev.tsv", bad_bytes="skip")
        rows = [{"anchor": t.head, "positive": t.tail} for t in duplicates if t.head != t.tail]
        return rows, {"duplicate_pairs": len(rows), "skipped_lines": skipped}
    if name == "flickr8k":
        from sentlab.data.relations import numbered_lines, tab_fields

        folder = data / "relations" / "flickr8k"
        images = {line.strip() for _, line in numbered_lines(folder / "Flickr_8k.trainImages.txt")[0]}
        captions: dict[str, list[str]] = {}
        path = folder / "Flickr8k.token.txt"
        for number, line in numbered_lines(path)[0]:
            key, caption = tab_fields(path, number, line, 2)[:2]
            image = key.split("#", 1)[0]
            if image in images:
                captions.setdefault(image, []).append(caption.strip())
        rng = random.Random(seed)
        rows = []
        for image in sorted(captions):
            if len(captions[image]) >= 2:
                anchor, positive = rng.sample(captions[image], 2)
                rows.append({"anchor": anchor, "positive": positive})
        return rows, {"images": len(captions)}
    from sentlab.data.nli import read_snli_triplets

    triplets = read_snli_triplets(data / "senteval" / "downstream" / "SNLI", "dev")
    return [{"anchor": a, "positive": p, "negative": n} for a, p, n in triplets], {"triplets": len(triplets)}


def same_rows(rows: list[dict], mined: list[dict]) -> list[dict]:
    """The rows whose (anchor, positive) the mining gave a negative, as often as it did."""
    left = Counter((r["anchor"], r["positive"]) for r in mined)
    kept = []
    for row in rows:
        if left[row["anchor"], row["positive"]] > 0:
            left[row["anchor"], row["positive"]] -= 1
            kept.append(row)
    if len(kept) != len(mined):
        raise SystemExit(f"{len(mined) - len(kept)} mined triplets have no pair of their own")
    return kept


def config(train: Path, columns: list[str], out: Path) -> Path:
    import yaml

    tree = json.loads(json.dumps(SETTINGS))
    tree["data"] = {"train": str(train.resolve()), "columns": {c: c for c in columns}}
    out.write_text(yaml.safe_dump(tree, sort_keys=False), encoding="utf-8")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument(
        "--datasets", nargs="+", choices=("qqp", "flickr8k", "snli"), default=["qqp", "flickr8k", "snli"]
    )
    parser.add_argument("--queries", type=int, default=2000, help="QQP test queries of the retrieval card")
    args = parser.parse_args()

    from sentlab.cache import file_sha256
    from sentlab.mining import same_text_key

    data = Path(os.environ.get("SENTLAB_DATA", "../shared/data"))
    out = args.output.resolve()
    card, card_counts = qqp_card(data, out / "qqp-duplicates", args.queries, seed=0)
    held_out = scored_texts(data, card)
    card_sha = file_sha256(card.parent / "corpus.jsonl")[:12] + file_sha256(card.parent / "queries.jsonl")[:12]
    start = out / f"start-{card_sha}-{file_sha256(card.parent / 'qrels.tsv')[:12]}.json"  # per card content
    if not start.is_file():
        sentlab(["eval", "--model", "minilm", "--tasks", "sts", "--task-card", str(card), "--items", "--quiet",
                 "--output", str(start)])  # fmt: skip
    start_scores = json.loads(start.read_text("utf-8"))
    summary = {
        "settings": SETTINGS,
        "card": card_counts,
        "start": {
            "model": "minilm",
            "sts_avg": start_scores["summary"]["sts_avg"],
            "qqp-duplicates": start_scores["tasks"]["qqp-duplicates"]["scores"],
        },  # fmt: skip
        "datasets": {},
    }
    for name in args.datasets:
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        rows, read = training_rows(name, data, seed=0)
        kept = [r for r in rows if not any(same_text_key(text) in held_out for text in r.values())]
        read["dropped_sharing_a_scored_text"] = len(rows) - len(kept)
        pairs = folder / "pairs.jsonl"
        write_jsonl(pairs, [{"anchor": r["anchor"], "positive": r["positive"]} for r in kept])
        mined, report, source = folder / "mined.jsonl", folder / "mined.report.json", folder / "mined.source.json"
        made_from = {"pairs_sha256": file_sha256(pairs)}
        if not (report.is_file() and source.is_file() and json.loads(source.read_text("utf-8")) == made_from):
            source.unlink(missing_ok=True)
            sentlab(["mine", "--model", "minilm", "--input", str(pairs), "--output", str(mined)])
            source.write_text(json.dumps(made_from) + "\n", encoding="utf-8")
        triplets = read_jsonl(mined)
        same = same_rows(kept, triplets)  # every kind of negative: the rows the mining found a negative for
        write_jsonl(folder / "in-batch.jsonl", [{"anchor": r["anchor"], "positive": r["positive"]} for r in same])
        configs = {"in-batch": config(folder / "in-batch.jsonl", ["anchor", "positive"], folder / "in-batch.yaml")}
        if "negative" in kept[0]:
            write_jsonl(folder / "own.jsonl", same)
            configs["own-negatives"] = config(folder / "own.jsonl", ["anchor", "positive", "negative"], folder / "own-negatives.yaml")  # fmt: skip
        configs["mined"] = config(mined, ["anchor", "positive", "negative"], folder / "mined.yaml")
        compared = [str(configs[k]) for k in ("mined", "own-negatives", "in-batch") if k in configs]
        cards = ["--task-card", str(card), "--sts"]
        seeds = ",".join(str(s) for s in args.seeds)
        sentlab(["compare", *compared, "--seeds", seeds, *cards, "--output", str(folder / "runs"), "--quiet"])
        summary["datasets"][name] = {
            "read": read,
            "pairs": len(kept),
            "rows_trained": len(same),
            "mining": json.loads(report.read_text("utf-8")),
            "compare": json.loads((folder / "runs" / "compare.json").read_text("utf-8")),
        }
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    from sentlab.errors import SentlabError

    try:
        main()
    except SentlabError as err:  # bad data: one line and a non-zero exit
        raise SystemExit(f"hard_negatives: {err}") from None
