"""CQADupStack forums as a user would bring them to ``sentlab adapt`` (issue 14): each forum's
retrieval task as a BEIR-layout task card (``OUTPUT/<forum>/forum.yaml``, USEB's MAP@100) and its
corpus titles - never its queries - as unlabelled text (``OUTPUT/<forum>/titles.txt``, one a line).
Prints one JSON object: per forum the card, the text file and the counts.

    python benchmarks/cqadupstack_cards.py --output runs/adapt-cards --forums mathematica,webmasters,android
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from task_cards_builtin import write_forum_card


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="runs/adapt-cards")
    parser.add_argument("--forums", default="mathematica,webmasters,android")
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
        summary[name] = {"card": str(card), "text": str(folder / "titles.txt"), "titles": len(titles),
                         "queries": len(forums[name].relevant)}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
