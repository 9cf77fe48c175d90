"""Papers in miniature: each seed paper's headline claim re-tested from sentlab's own raw LM.

Feeds: records papers-in-miniature; pages docs/methods/index.md, docs/methods/miniature.md,
docs/methods/rankcse.md, docs/methods/rankencoder.md, docs/methods/rse.md, docs/methods/tsdae.md,
docs/results.md.

Every arm starts from the same raw LM (rawlm-cpu-stage2, found by its fingerprint, or --raw-lm),
with its paper's recipe at CPU scale (the miniature/ presets, one preset per arm, the same budget for the
arms a claim compares), over --seeds; each model is scored with the paper's own evaluation, keeping
the items every headline is computed from (``sentlab eval --items``). The claims, declared as data in
:data:`CLAIMS`:

* a - SimCSE-unsup > the raw LM on the seven STS tasks (SimCSE Table 1: 76.25 vs BERT 56.70, first-last);
* b - RankEncoder (E1 = the SimCSE arm of the same seed) > SimCSE on STS (RankEncoder Table 1: +2.1);
* c - RankCSE ListNet / ListMLE (teacher = the SimCSE arm of the same seed) > SimCSE on STS (80.05 /
  80.36 vs 76.25) and on the ranking tasks of RankCSE App. A.6 (KCC);
* d - TSDAE Table 2 / 3, unsupervised: TSDAE, MLM, CT, SimCSE and BERT-flow trained on the target
  tasks' unlabelled sentences (the CQADupStack corpus titles of --forums and the TwitterPara
  sentences, one file), scored on those forums' MAP@100 and TwitterPara AP (their mean: "domain")
  and on STS-B: every method > the raw LM on the domain tasks; TSDAE first there; SimCSE and CT above
  TSDAE on STS-B;
* e - RSE (its relational score) > All-Above on STS (RSE Table 1: 82.17 vs 74.62), link prediction
  beside it;
* f - ``sentlab adapt`` from the raw LM on one forum's card: what it recommends, and whether the
  choice holds on the other forums' cards.

A verdict per claim from the multi-bootstrap over seeds and items
(:func:`sentlab.evaluation.uncertainty.seed_item_difference`; headlines over several tasks resample
each task's items on their own): *holds* when the difference is beyond the noise (the interval
excludes 0 and every seed agrees) in the claimed direction, *does not hold* when it is beyond the
noise the other way, *inconclusive* otherwise. The raw LM is one model (no seeds).

Resumable: a finished arm (its model), an interrupted one (``--resume`` from its checkpoint) and
every evaluation file are kept, so the command re-runs what is missing and nothing else (a finished
arm whose preset has changed since is refused, not reported as the new recipe's). Writes
OUTPUT/claims.json, OUTPUT/claims.md (the claims table, the arms' wall times), OUTPUT/claims.png
(each claim's margin with its interval), OUTPUT/link-prediction/ (claim e's side table) and
OUTPUT/report/ (``sentlab report`` over every scored model: the papers' STS / USEB layouts); prints
one JSON object (the claims) on stdout.

    python -m benchmarks.studies.papers_in_miniature --output runs/miniature
    python -m benchmarks.studies.papers_in_miniature --output runs/miniature --claims a,b --seeds 1 2 3
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common import scores as sentlab_scores
from sentlab.presets import PRESETS_DIR
from sentlab.reporting.claims import Claim, compare, write_claims

ROOT = Path(__file__).resolve().parents[2]

PRESETS = PRESETS_DIR / "miniature"
LINK_SOURCES = PRESETS_DIR / "link-prediction" / "rse-heldout.yaml"


@dataclass(frozen=True)
class ArmSpec:
    """One trained arm: its preset, what it trains on, which arms of the same seed it needs (config key
    -> arm: E1, teachers) and what it is scored on (``sts``: the seven STS tasks and the ranking tasks
    through ``sentlab eval``, with the method's own scorer; ``domain``: claim d's tasks)."""

    preset: str
    scored_on: str = "sts"  # "domain": trained on claim d's text, the target tasks' unlabelled sentences
    needs: dict[str, str] = field(default_factory=dict)


ARMS = {
    "simcse": ArmSpec("simcse.yaml"),
    "rankencoder": ArmSpec("rankencoder.yaml", needs={"rank.base_encoder": "simcse"}),
    "rankcse-listnet": ArmSpec("rankcse-listnet.yaml", needs={"rankcse.teachers": "simcse"}),
    "rankcse-listmle": ArmSpec("rankcse-listmle.yaml", needs={"rankcse.teachers": "simcse"}),
    "tsdae": ArmSpec("tsdae.yaml", "domain"),
    "mlm": ArmSpec("mlm.yaml", "domain"),
    "ct": ArmSpec("ct.yaml", "domain"),
    "simcse-domain": ArmSpec("simcse-domain.yaml", "domain"),
    "bert-flow": ArmSpec("bertflow.yaml", "domain"),
    "rse": ArmSpec("rse.yaml"),
    "rse-all-above": ArmSpec("rse-all-above.yaml"),
}
# the raw LM, scored once: "raw-mean" (its saved mean pooling) and "raw-first-last" (SimCSE's BERT row)
BASELINES = {"raw-mean": "mean", "raw-first-last": "first_last_avg"}


CLAIMS = [
    Claim("a", "SimCSE Table 1 (BERT first-last 56.70 -> 76.25)", "simcse", "raw-first-last", "sts_avg", 19.55),
    Claim("a", "SimCSE Table 1 (against the raw LM's mean pooling)", "simcse", "raw-mean", "sts_avg"),
    Claim("b", "RankEncoder Table 1 (SimCSE 76.25 -> 78.34, three seeds)", "rankencoder", "simcse", "sts_avg", 2.09),
    Claim("c", "RankCSE Table 1 (ListNet 80.05 vs SimCSE 76.25)", "rankcse-listnet", "simcse", "sts_avg", 3.80),
    Claim("c", "RankCSE Table 1 (ListMLE 80.36 vs SimCSE 76.25)", "rankcse-listmle", "simcse", "sts_avg", 4.11),
    Claim("c", "RankCSE App. A.6 (ranking tasks)", "rankcse-listnet", "simcse", "ranking_kcc_avg"),
    Claim("c", "RankCSE App. A.6 (ranking tasks)", "rankcse-listmle", "simcse", "ranking_kcc_avg"),
    *[
        Claim("d", f"TSDAE Table 2 (every method > BERT; {arm})", arm, "raw-mean", "domain")
        for arm in ("tsdae", "mlm", "ct", "simcse-domain", "bert-flow")
    ],
    *[
        Claim("d", f"TSDAE Table 2 (TSDAE 55.2 first; {arm})", "tsdae", arm, "domain")
        for arm in ("mlm", "ct", "simcse-domain", "bert-flow")
    ],
    Claim("d", "TSDAE Table 3 (STS-B: SimCSE 73.8 vs TSDAE 66.0)", "simcse-domain", "tsdae", "STS-B", 7.8),
    Claim("d", "TSDAE Table 3 (STS-B: CT 73.9 vs TSDAE 66.0)", "ct", "tsdae", "STS-B", 7.9),
    Claim("e", "RSE Table 1 (RSE 82.17 vs All-Above 74.62)", "rse", "rse-all-above", "sts_avg", 7.55),
]


class Miniature:
    """The run folder: arms (``arms/<arm>/seed-<s>``), baselines and their scores (``scores/``)."""

    def __init__(
        self,
        output: Path,
        raw_lm: Path,
        seeds: list[int],
        forums: list[str],
        data_dir: str | None,
        overrides: list[str] | None = None,
    ):
        self.output, self.raw_lm, self.seeds, self.forums, self.data_dir = output, raw_lm, seeds, forums, data_dir
        self.overrides = overrides or []

    def run_folder(self, arm: str, seed: int) -> Path:
        return self.output / "arms" / arm / f"seed-{seed}"

    def domain_text(self) -> Path:
        """Claim d's training text: the corpus titles of the forums and the TwitterPara sentences, one
        file, unique lines, shuffled with seed 0 (written once)."""
        path = self.output / "domain.txt"
        if path.is_file():
            return path
        from sentlab.data.useb import load_cqadupstack, load_twitterpara, task_folder
        from sentlab.paths import write_text_atomic

        forums = load_cqadupstack(task_folder("CQADupStack", self.data_dir))
        twitter = load_twitterpara(task_folder("TwitterPara", self.data_dir))
        lines = {" ".join(t.split()) for name in self.forums for t in forums[name].corpus.values()}
        lines |= {" ".join(t.split()) for pairs in twitter.values() for t in (*pairs.sentences1, *pairs.sentences2)}
        lines = sorted(line for line in lines if line)
        random.Random(0).shuffle(lines)
        write_text_atomic(path, "".join(line + "\n" for line in lines))
        return path

    def train(self, arm: str, seed: int) -> Path:
        """The arm's model folder, trained (or resumed) when it is not there yet; a finished arm whose
        learned settings differ from what its preset gives now is refused (one line, exit 1), never reused."""
        from sentlab.methods import load_config
        from sentlab.training.checkpoints import checkpoint_folders
        from sentlab.training.engine import changes_since_start, train
        from sentlab.training.run_folder import RunPaths, write_json

        spec = ARMS[arm]
        paths = RunPaths(self.run_folder(arm, seed))
        overrides = [
            f"model.name={self.raw_lm}",
            f"train.seed={seed}",
            f"train.output_dir={paths.root}",
            "train.progress_bar=false",
            *self.overrides,
        ]
        for key, needed in spec.needs.items():
            model = self.train(needed, seed)
            overrides.append(f"{key}=[{model}]" if key == "rankcse.teachers" else f"{key}={model}")
        if spec.scored_on == "domain":
            overrides.append(f"data.train={self.domain_text()}")
        if self.data_dir:
            overrides.append(f"data.data_dir={self.data_dir}")
        cfg = load_config(PRESETS / spec.preset, overrides)
        if (paths.model / "modules.json").is_file():
            stale = changes_since_start(cfg, paths)
            if stale:  # a preset changed since: its old model and scores would be reported as the new recipe's
                raise SystemExit(
                    f"{paths.root}: trained with other settings than {spec.preset} gives now "
                    f"({'; '.join(stale)}); move it, {self.output}/scores/{arm}-seed{seed}-* and "
                    f"{self.output}/link-prediction/{arm}-seed{seed}.json aside to train it again"
                )
            return paths.model
        started = time.perf_counter()
        train(cfg, resume=bool(checkpoint_folders(paths.checkpoints)), evaluate=False)
        write_json(paths.root / "wall_seconds.json", round(time.perf_counter() - started, 1))
        return paths.model

    def scores(self, name: str, model: Path, scored_on: str, pooler: str | None = None) -> dict:
        """The results file of ``model`` on its claim's tasks, with items (written once)."""
        path = self.output / "scores" / f"{name}-{scored_on}.json"
        if not path.is_file():
            if scored_on == "sts":
                self._sentlab_eval(model, path, pooler)
            else:
                self._domain_eval(model, path, pooler)
        return json.loads(path.read_text("utf-8"))

    def _sentlab_eval(self, model: Path, path: Path, pooler: str | None) -> None:
        options = ["--items", *(["--pooler", pooler] if pooler else [])]
        sentlab_scores(
            model, "sts,ranking", path, [*options, *(["--data-dir", self.data_dir] if self.data_dir else [])]
        )

    def _domain_eval(self, model: Path, path: Path, pooler: str | None) -> None:
        """Claim d's tasks: the forums' MAP@100, TwitterPara AP and STS-B (TSDAE Table 2 / 3)."""
        from sentlab.data.useb import load_cqadupstack, task_folder
        from sentlab.encoders import load_encoder

        forums = load_cqadupstack(task_folder("CQADupStack", self.data_dir))
        report = domain_report(
            load_encoder(str(model), pooler=pooler).eval(),
            path.stem,
            {f: forums[f] for f in self.forums},
            self.data_dir,
            sts_tasks=["STS-B"],
            items=True,
        )
        report.write(path)

    def results(self, row: str, scored_on: str) -> list[dict]:
        """A row's results files on ``scored_on``: one per seed for an arm, one for a baseline."""
        if row in BASELINES:
            return [self.scores(row, self.raw_lm, scored_on, BASELINES[row])]
        return [self.scores(f"{row}-seed{seed}", self.train(row, seed), ARMS[row].scored_on) for seed in self.seeds]


def domain_report(model, name: str, forums: dict, data_dir: str | None, sts_tasks=None, items: bool = False):
    """The TSDAE paper's domain tasks on a forum subset: CQADupStack MAP@100 over ``forums`` (each its
    own pool), TwitterPara AP, and the STS tasks (all seven by default); ``items``: keep what each
    headline is computed from (``sentlab.evaluation.uncertainty``)."""
    from sentlab.data.sts import STS_TASKS
    from sentlab.data.useb import load_twitterpara, task_folder
    from sentlab.evaluation import CosineScorer, evaluate_sts
    from sentlab.evaluation.results import EvalReport
    from sentlab.evaluation.scoring import EmbeddingCache
    from sentlab.evaluation.useb import score_cqadupstack, score_twitterpara

    cache = EmbeddingCache(model)
    report = EvalReport(model=name, settings={"cqadupstack_forums": sorted(forums)})
    report.tasks["CQADupStack"] = score_cqadupstack(cache.encode, forums, device=model.device, items=items)
    report.tasks["TwitterPara"] = score_twitterpara(
        cache.encode, load_twitterpara(task_folder("TwitterPara", data_dir)), items=items
    )
    evaluate_sts(
        CosineScorer(cache, name=name),
        data_dir,
        tasks=sts_tasks or tuple(STS_TASKS),
        report=report,
        extras=False,
        items=items,
    )
    return report


def judge(mini: Miniature, claim: Claim) -> dict:
    scored_on = ARMS[claim.better].scored_on
    return compare(claim, mini.results(claim.better, scored_on), mini.results(claim.worse, scored_on))


def link_prediction(mini: Miniature) -> dict[str, list[dict[str, float]]]:
    """Claim e's "link prediction beside it": RSE App. B (Table 7's protocol, ``sentlab link-prediction``:
    held-out SNLI test, QQP test and Flickr8k test-image triples, 2,000 a source, filtered, every tail of
    the split a candidate) of each seed's RSE and All-Above model (All-Above has no relation vectors, so
    plain cosine) and of the raw LM's [CLS] (the arms' pooling; plain cosine). No verdict: the paper reports
    it for RSE alone. Per row its metrics over all triples, one per seed (files in OUTPUT/link-prediction/,
    written once)."""
    from sentlab.cli import main

    def metrics(name: str, model: Path, pooler: list[str]) -> dict[str, float]:
        path = mini.output / "link-prediction" / f"{name}.json"
        if not path.is_file():
            argv = [
                "link-prediction",
                "--model",
                str(model),
                "--sources",
                str(LINK_SOURCES),
                "--quiet",
                "--output",
                str(path),
                *pooler,
            ]
            with contextlib.redirect_stdout(sys.stderr):
                if main(argv):
                    raise SystemExit(f"sentlab link-prediction failed for {model}")
        return json.loads(path.read_text("utf-8"))["metrics"]["all"]

    rows = {"raw-cls": [metrics("raw-cls", mini.raw_lm, ["--pooler", "cls"])]}
    for arm in ("rse", "rse-all-above"):
        rows[arm] = [metrics(f"{arm}-seed{seed}", mini.train(arm, seed), []) for seed in mini.seeds]
    return rows


def link_prediction_section(rows: dict[str, list[dict[str, float]]]) -> str:
    """The markdown table of :func:`link_prediction`: per row the mean over seeds, each seed in brackets."""

    def cell(runs: list[dict[str, float]], key: str, form: str) -> str:
        values = [r[key] for r in runs]
        each = f" ({', '.join(format(v, form) for v in values)})" if len(values) > 1 else ""
        return format(sum(values) / len(values), form) + each

    lines = [
        "## e: link prediction beside it (RSE App. B protocol, filtered, all held-out triples)",
        "",
        "| model | MRR | Hits@1 | Hits@10 | MR |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {row} | {cell(runs, 'mrr', '.3f')} | {cell(runs, 'hits@1', '.3f')} | {cell(runs, 'hits@10', '.3f')} | "
        f"{cell(runs, 'mr', '.0f')} |"
        for row, runs in rows.items()
    ]
    return "\n".join(lines)


def adapt_claim(mini: Miniature, forum: str, others: list[str], steps: int) -> dict:
    """Claim f: ``sentlab adapt`` from the raw LM on ``forum``'s card (cards built with
    benchmarks/studies/cqadupstack_cards.py), the other forums' cards beside it."""
    import subprocess

    from sentlab.cli import main

    cards = mini.output / "cards"
    forums = [forum, *others]
    if not all((cards / f / "forum.yaml").is_file() for f in forums):
        subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.studies.cqadupstack_cards",
                "--output",
                str(cards),
                "--forums",
                ",".join(forums),
                *(["--data-dir", mini.data_dir] if mini.data_dir else []),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    output = mini.output / "adapt"
    argv = [
        "adapt",
        "--model",
        str(mini.raw_lm),
        "--text",
        str(cards / forum / "titles.txt"),
        *[a for f in forums for a in ("--task-card", str(cards / f / "forum.yaml"))],
        "--steps",
        str(steps),
        "--max-seq-length",
        "64",
        "--seeds",
        ",".join(map(str, mini.seeds)),
        "--output",
        str(output),
        "--quiet",
        *(["--data-dir", mini.data_dir] if mini.data_dir else []),
    ]
    started = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):
        if main(argv):
            raise SystemExit("sentlab adapt failed")
    report = json.loads((output / "report.json").read_text("utf-8"))
    facts = report["facts"]
    return {
        "claim": "f",
        "statement": f"sentlab adapt from the raw LM on {forum}",
        "recommendation": report["recommendation"],
        "decision": facts.get("decision"),
        "chosen": facts.get("chosen"),
        "other_tasks": facts.get("other_tasks"),
        "wall_seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="runs/miniature")
    parser.add_argument("--raw-lm", default=None, help="a raw LM folder (default: found by --raw-config)")
    parser.add_argument(
        "--raw-config",
        default=str(PRESETS_DIR / "rawlm-cpu-stage2.yaml"),
        help="the raw LM's preset: its finished run is the LM (default: the 40 %% LM of two stages)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--claims", default="a,b,c,d,e,f", help="which claims (comma-separated letters)")
    parser.add_argument("--forums", default="mathematica,webmasters", help="claim d's CQADupStack forums")
    parser.add_argument("--adapt-forum", default="mathematica", help="claim f: the user's forum")
    parser.add_argument("--adapt-others", default="webmasters,android", help="claim f: the other forums' cards")
    parser.add_argument("--adapt-steps", type=int, default=500)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config override for every arm (a quick run: --set train.max_steps=20)",
    )
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    from sentlab.errors import SentlabError
    from sentlab.methods import load_config
    from sentlab.progress import set_quiet
    from sentlab.training.run_folder import require_finished_run

    wanted = set(args.claims.split(","))
    unknown = wanted - {c.id for c in CLAIMS} - {"f"}
    if unknown:
        raise SystemExit(f"unknown claim(s): {', '.join(sorted(unknown))} (a-f)")
    if args.raw_lm and not (Path(args.raw_lm) / "modules.json").is_file():
        raise SystemExit(f"{args.raw_lm}: not a sentence-transformers model folder (no modules.json)")
    try:
        raw_lm = (
            Path(args.raw_lm) if args.raw_lm else require_finished_run(load_config(args.raw_config), args.raw_config)
        ).resolve()
    except SentlabError as err:
        raise SystemExit(f"{err} (--raw-lm PATH)") from None
    set_quiet(True)
    output = Path(args.output).resolve()  # absolute: the arms' configs name the same paths from any folder
    output.mkdir(parents=True, exist_ok=True)
    mini = Miniature(output, raw_lm, args.seeds, args.forums.split(","), args.data_dir, args.set)
    rows = [judge(mini, claim) for claim in CLAIMS if claim.id in wanted]
    links = link_prediction(mini) if "e" in wanted else None
    adapt = (
        adapt_claim(mini, args.adapt_forum, args.adapt_others.split(","), args.adapt_steps) if "f" in wanted else None
    )
    wall = {
        arm: {
            int(p.parent.name.split("-")[1]): json.loads(p.read_text("utf-8"))
            for p in sorted((output / "arms" / arm).glob("seed-*/wall_seconds.json"))
        }
        for arm in ARMS
        if (output / "arms" / arm).is_dir()
    }
    sections = [
        "## Training wall time (s, per seed)\n\n| arm | per seed |\n|---|---|\n"
        + "\n".join(
            f"| {arm} | " + ", ".join(f"{s}: {w:.0f}" for s, w in sorted(by_seed.items())) + " |"
            for arm, by_seed in wall.items()
        )
    ]
    if links is not None:
        sections.append(link_prediction_section(links))
    if adapt is not None:
        sections.append(
            f"## f: {adapt['statement']}\n\n{adapt['recommendation']}\n\n" + "\n".join(adapt["other_tasks"] or [])
        )
    write_claims(
        output,
        rows,
        {
            "raw_lm": str(mini.raw_lm),
            "seeds": args.seeds,
            "adapt": adapt,
            "link_prediction": links,
            "wall_seconds": wall,
        },
        sections,
    )
    with contextlib.redirect_stdout(sys.stderr):
        from sentlab.cli import main as sentlab_main

        sentlab_main(
            ["report", *map(str, sorted((output / "scores").glob("*.json"))), "--output", str(output / "report")]
        )
    print(
        json.dumps(
            {"raw_lm": str(mini.raw_lm), "seeds": args.seeds, "claims": rows, "adapt": adapt, "link_prediction": links}
        )
    )


if __name__ == "__main__":
    main()
