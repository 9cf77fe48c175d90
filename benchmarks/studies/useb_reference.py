"""sentlab's USEB scores against the official ``useb`` toolkit on the same embeddings.

Feeds: no record (its figures are quoted by hand); pages docs/results.md.

Needs the toolkit (not a sentlab dependency): ``pip install useb pytrec-eval-terrier`` (or
``--toolkit-path`` to a folder they were installed into with ``pip install --target``).

* Real data, with ``--model``: TwitterPara (TURL and PIT, written into the toolkit's layout; the
  toolkit's TURL reader cannot skip empty lines, so the copy has none) and the CQADupStack forums
  named by ``--forums`` (their titles re-packed as the toolkit's ``corpus.json`` +
  ``retrieval_split.json``).
* AskUbuntu, TwitterPara and SciDocs on the small fixtures of the tests (``tests/fake_data.py``)
  with the tests' fixed "angle" vectors - this covers AskUbuntu and SciDocs, which have no data here
  (the toolkit's CQADupStack needs pools of at least 100 titles, so it is compared on real data only).

Each text is encoded once and both implementations read the same vectors. Prints JSON: sentlab's
score, the toolkit's (which it rounds to 2 decimals), and their difference.

    python -m benchmarks.studies.useb_reference --model minilm --forums mathematica webmasters android
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from sentlab.data.useb import load_askubuntu, load_cqadupstack, load_scidocs, load_twitterpara, task_folder  # noqa: E402
from sentlab.evaluation.useb import score_askubuntu, score_cqadupstack, score_scidocs, score_twitterpara  # noqa: E402


class Cached:
    """One vector per text, shared by both implementations."""

    def __init__(self, encode):
        self.encode = encode
        self.rows: dict[str, np.ndarray] = {}

    def __call__(self, texts):
        missing = [t for t in dict.fromkeys(texts) if t not in self.rows]
        if missing:
            self.rows.update(zip(missing, np.asarray(self.encode(missing), dtype=np.float32)))
        return np.stack([self.rows[t] for t in texts])

    def torch_fn(self, texts):
        return torch.as_tensor(self(list(texts)))


def toolkit(name: str, vectors: Cached, data_eval: Path) -> dict[str, float]:
    import useb

    return useb.run_on(name, vectors.torch_fn, eval_type="test", data_eval_path=str(data_eval))


def write_toolkit_twitterpara(source: Path, target: Path) -> None:
    target.mkdir(parents=True)
    lines = [line for line in (source / "Twitter_URL_Corpus_test.txt").read_text("utf-8").splitlines() if line.strip()]
    (target / "Twitter_URL_Corpus_test.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for name in ("test.data", "test.label"):
        (target / name).write_bytes((source / name).read_bytes())


def write_toolkit_cqadupstack(forums, target: Path) -> None:
    target.mkdir(parents=True)
    corpus = {name: {**f.corpus, **f.queries} for name, f in forums.items()}
    split = {name: {q: sorted(d) for q, d in f.relevant.items()} for name, f in forums.items()}
    (target / "corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    (target / "retrieval_split.json").write_text(json.dumps({"valid": split, "test": split}), encoding="utf-8")


def compare(ours: float, theirs: float) -> dict[str, float]:
    return {"sentlab": round(ours, 4), "useb": theirs, "difference": round(ours - theirs, 4)}


def real_data(model_name: str, forum_names: list[str], work: Path) -> dict:
    from sentlab.encoders import load_encoder

    encoder = load_encoder(model_name)
    vectors = Cached(lambda texts: encoder.encode(texts, batch_size=128))
    out = {}
    sets = load_twitterpara(task_folder("TwitterPara"))
    ours = score_twitterpara(vectors, sets)
    write_toolkit_twitterpara(task_folder("TwitterPara"), work / "real" / "twitterpara")
    theirs = toolkit("TwitterPara", vectors, work / "real")
    out["TwitterPara"] = {
        "TURL ap": compare(ours.parts["TURL"]["ap"], theirs["ap_twitter_twitterurl"]),
        "PIT ap": compare(ours.parts["PIT"]["ap"], theirs["ap_twitter_pit"]),
        "spearman avg": compare(ours.scores["spearman"], theirs["spearman_twitter_avg"]),
    }
    forums = {k: v for k, v in load_cqadupstack(task_folder("CQADupStack")).items() if k in forum_names}
    ours = score_cqadupstack(vectors, forums)
    write_toolkit_cqadupstack(forums, work / "real" / "cqadupstack")
    theirs = toolkit("CQADupStack", vectors, work / "real")
    out["CQADupStack"] = {
        f"{name} map@100": compare(ours.parts[name]["map@100"], theirs[f"map@100_cqadupstack_{name}"])
        for name in forums
    }
    return out


def fixtures(work: Path) -> dict:
    from tests.angles import angle_vectors
    from tests.evaluation.test_useb import ASKU, SCIDOCS, TWITTER
    from tests.fake_data import write_askubuntu, write_scidocs, write_twitterpara

    ours_root, theirs_root = work / "fixtures-sentlab", work / "fixtures-useb"
    out = {}
    asku = Cached(angle_vectors(ASKU))
    out["AskUbuntu map"] = compare(
        score_askubuntu(asku, load_askubuntu(write_askubuntu(ours_root))).main,
        toolkit("AskUbuntu", asku, write_askubuntu(theirs_root).parent)["map_askubuntu_title"],
    )
    twitter = Cached(angle_vectors(TWITTER))
    source = write_twitterpara(ours_root)
    write_toolkit_twitterpara(source, theirs_root / "twitterpara")
    out["TwitterPara ap"] = compare(
        score_twitterpara(twitter, load_twitterpara(source)).main,
        toolkit("TwitterPara", twitter, theirs_root)["ap_twitter_avg"],
    )
    scidocs = Cached(angle_vectors(SCIDOCS))
    out["SciDocs map"] = compare(
        score_scidocs(scidocs, load_scidocs(write_scidocs(ours_root))).main,
        toolkit("SciDocs", scidocs, write_scidocs(theirs_root).parent)["map_scidocs_cosine_avg"],
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None, help="also compare on the real TwitterPara / CQADupStack data")
    parser.add_argument("--forums", nargs="+", default=["mathematica", "webmasters", "android"])
    parser.add_argument("--toolkit-path", default=None, help="folder holding the useb and pytrec_eval packages")
    args = parser.parse_args()
    if args.toolkit_path:
        sys.path.append(args.toolkit_path)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        result = {"fixtures": fixtures(work)}
        if args.model:
            result["real"] = real_data(args.model, args.forums, work)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
