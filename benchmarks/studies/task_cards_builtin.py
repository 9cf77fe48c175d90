"""Built-in tasks re-expressed as task cards give the built-in figures: STS-B test as
scored pairs, TwitterPara's PIT-2015 as labelled pairs, one CQADupStack forum as BEIR-layout retrieval
(``map: useb``, USEB's AP@100), SentEval's TREC as classification (train / test files; the built-in
rounds accuracy to two decimals as SentEval does, the card does not, so the card's figure is rounded
before the difference is taken). Writes the cards and their files under OUTPUT, scores both ways with
one model and prints one JSON object (built-in figure, card figure, difference).

Feeds: no record (its figures are quoted by hand); pages docs/results.md.

    python -m benchmarks.studies.task_cards_builtin --output runs/cards --forum mathematica
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def write_jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def write_forum_card(forum, name: str, out: Path) -> Path:
    """One CQADupStack forum in the BEIR layout under ``out`` and its card (``map: useb``, k 100)."""
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "corpus.jsonl", ({"_id": i, "title": "", "text": t} for i, t in forum.corpus.items()))
    write_jsonl(out / "queries.jsonl", ({"_id": i, "text": t} for i, t in forum.queries.items()))
    (out / "qrels.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        + "".join(f"{q}\t{d}\t1\n" for q, docs in forum.relevant.items() for d in sorted(docs)),
        encoding="utf-8",
    )
    (out / "forum.yaml").write_text(
        f"name: {name}\nkind: retrieval\ncorpus: corpus.jsonl\n"
        "queries: queries.jsonl\nqrels: qrels.tsv\nk: 100\nmap: useb\nmain_metric: map@100\n"
    )
    return out / "forum.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--output", default="runs/cards")
    parser.add_argument("--forum", default="mathematica")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    from sentlab.data.sts import load_sts_task
    from sentlab.data.useb import load_cqadupstack, load_twitterpara, task_folder
    from sentlab.encoders import load_encoder
    from sentlab.evaluation import CosineScorer
    from sentlab.evaluation.scoring import EmbeddingCache
    from sentlab.evaluation.sts import score_task
    from sentlab.evaluation.task_cards import load_task_card, score_task_card
    from sentlab.evaluation.useb import score_cqadupstack, score_twitterpara
    from sentlab.progress import set_quiet

    set_quiet(True)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    cache = EmbeddingCache(load_encoder(args.model).eval())
    scorer = CosineScorer(cache)
    summary: dict = {"model": args.model}

    stsb = load_sts_task("STS-B", args.data_dir)
    write_jsonl(
        out / "stsb.jsonl",
        ({"s1": a, "s2": b, "score": float(s)} for a, b, s in zip(stsb.sentences1, stsb.sentences2, stsb.scores)),
    )
    (out / "stsb.yaml").write_text("name: stsb-card\nkind: scored-pairs\nfile: stsb.jsonl\ncolumns: [s1, s2, score]\n")
    summary["STS-B spearman"] = {
        "builtin": score_task(scorer, stsb).spearman,
        "card": score_task_card(scorer, load_task_card(out / "stsb.yaml")).main,
    }

    pit = {"PIT": load_twitterpara(task_folder("TwitterPara", args.data_dir))["PIT"]}
    decided = [
        (a, b, label)
        for a, b, label in zip(pit["PIT"].sentences1, pit["PIT"].sentences2, pit["PIT"].labels)
        if label >= 0
    ]
    write_jsonl(out / "pit.jsonl", ({"t1": a, "t2": b, "label": int(label)} for a, b, label in decided))
    (out / "pit.yaml").write_text("name: pit-card\nkind: labelled-pairs\nfile: pit.jsonl\ncolumns: [t1, t2, label]\n")
    summary["TwitterPara PIT ap"] = {
        "builtin": score_twitterpara(cache.encode, pit).parts["PIT"]["ap"],
        "card": score_task_card(scorer, load_task_card(out / "pit.yaml")).main,
    }

    forum = load_cqadupstack(task_folder("CQADupStack", args.data_dir))[args.forum]
    card = score_task_card(scorer, load_task_card(write_forum_card(forum, f"{args.forum}-card", out)))
    summary[f"CQADupStack {args.forum} map@100"] = {
        "builtin": score_cqadupstack(cache.encode, {args.forum: forum}).main,
        "card": card.main,
        "card_trec_ndcg@10": card.scores["ndcg@10"],
    }
    from sentlab.data.transfer import load_transfer_task
    from sentlab.evaluation.transfer import score_transfer

    trec = load_transfer_task("TREC", args.data_dir)
    for split in ("train", "test"):
        write_jsonl(
            out / f"trec-{split}.jsonl",
            ({"text": t, "label": str(y)} for t, y in zip(trec.splits[split].sentences, trec.splits[split].labels)),
        )
    (out / "trec.yaml").write_text(
        "name: trec-card\nkind: classification\nfile: trec-train.jsonl\ntest: trec-test.jsonl\n"
    )
    summary["TREC accuracy"] = {
        "builtin": score_transfer(trec, lambda s: cache.encode(list(s))).main,
        "card": round(score_task_card(scorer, load_task_card(out / "trec.yaml")).main, 2),
    }
    for entry in summary.values():
        if isinstance(entry, dict):
            entry["difference"] = entry["card"] - entry["builtin"]
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
