"""CQADupStack forums as a user would bring them to ``sentlab adapt``: each forum's
retrieval task as a BEIR-layout task card (``OUTPUT/<forum>/forum.yaml``, USEB's MAP@100) and its
corpus titles - never its queries - as unlabelled text (``OUTPUT/<forum>/titles.txt``, one a line).
With ``--dev-queries N``, also a dev / test split of each forum's queries (seeded): ``dev.yaml`` and
``test.yaml`` over the same corpus, N queries' judgements in ``qrels-dev.tsv`` and the rest in
``qrels-test.tsv``, for ``sentlab adapt --dev-card``. Prints one JSON object: per forum the cards, the
text file and the counts.

Feeds: records adapt-minilm-mathematica; pages docs/guides/adapt.md, docs/methods/index.md,
docs/methods/tsdae.md, docs/results.md.

    python -m benchmarks.studies.cqadupstack_cards --output runs/adapt-cards --forums mathematica,webmasters,android
    python -m benchmarks.studies.cqadupstack_cards --output runs/adapt-cards --forums mathematica --dev-queries 200
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from benchmarks.studies.task_cards_builtin import write_forum_card


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="runs/adapt-cards")
    parser.add_argument("--forums", default="mathematica,webmasters,android")
    parser.add_argument("--dev-queries", type=int, default=0, help="queries moved to a dev card (0: none)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    from sentlab.data.useb import load_cqadupstack, task_folder

    forums = load_cqadupstack(task_folder("CQADupStack", args.data_dir))
    summary = {}
    for name in args.forums.split(","):
        folder = Path(args.output) / name
        card = write_forum_card(forums[name], name, folder)
        titles = sorted({" ".join(t.split()) for t in forums[name].corpus.values() if t.strip()})
        (folder / "titles.txt").write_text("".join(t + "\n" for t in titles), encoding="utf-8")
        summary[name] = {
            "card": str(card),
            "text": str(folder / "titles.txt"),
            "titles": len(titles),
            "queries": len(forums[name].relevant),
        }
        if args.dev_queries:
            relevant = forums[name].relevant
            queries = sorted(relevant)
            random.Random(args.seed).shuffle(queries)
            for split, chosen in (("dev", queries[: args.dev_queries]), ("test", queries[args.dev_queries :])):
                (folder / f"qrels-{split}.tsv").write_text(
                    "query-id\tcorpus-id\tscore\n"
                    + "".join(f"{q}\t{d}\t1\n" for q in sorted(chosen) for d in sorted(relevant[q])),
                    encoding="utf-8",
                )
                (folder / f"{split}.yaml").write_text(
                    f"name: {name}-{split}\nkind: retrieval\ncorpus: corpus.jsonl\nqueries: queries.jsonl\n"
                    f"qrels: qrels-{split}.tsv\nk: 100\nmap: useb\nmain_metric: map@100\n",
                    encoding="utf-8",
                )
                summary[name][f"{split}_card"], summary[name][f"{split}_queries"] = (
                    str(folder / f"{split}.yaml"),
                    len(chosen),
                )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
