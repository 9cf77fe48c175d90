"""sentlab compare: configs over seeds, scored on the same items, each one's difference from the last
with its interval over seeds and items; finished seeds are not trained again."""

from __future__ import annotations

import json

import pytest
import yaml

from sentlab.cli import main
from tests.conftest import the_error, tiny_config, write_scored_pairs_card
from tests.fake_data import write_sts


def configs(tiny_backbone, corpus_file, tmp_path):
    first = tiny_config(tiny_backbone, corpus_file, tmp_path / "unused", max_steps=2).to_tree()
    first["model"]["inference_max_seq_length"] = 24  # the backbone's own is 64: the start must not take it
    second = json.loads(json.dumps(first))
    second["loss"]["temperature"] = 0.5  # "your own loss": SimCSE at another temperature
    third = json.loads(json.dumps(first))
    third["train"]["learning_rate"] = 1e-3
    paths = []
    for name, tree in (("mine", second), ("faster", third), ("simcse", first)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(tree))
        paths.append(str(path))
    return paths


@pytest.mark.slow  # nine tiny runs, each scored twice
def test_configs_are_compared_with_the_last_over_seeds_on_the_same_items(tiny_backbone, corpus_file, tmp_path, capsys):
    card = write_scored_pairs_card(tmp_path, corpus_file, "my-task")
    data = write_sts(tmp_path / "data")
    first, second, baseline = configs(tiny_backbone, corpus_file, tmp_path)
    argv = ["compare", first, second, baseline, "--seeds", "1,2,3", "--task-card", str(card), "--sts"]
    argv += ["--data-dir", str(data), "--output", str(tmp_path / "cmp")]
    assert main([*argv, "--quiet"]) == 0
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert result["baseline"] == "simcse" and set(result["minus_baseline"]) == {"mine", "faster"}
    for label in ("mine", "faster"):
        for task in ("sts_avg", "my-task"):
            d = result["minus_baseline"][label][task]
            assert len(d["per_seed"]) == 3 and d["low"] <= d["difference"] <= d["high"] and d["seeds"] == 3
            # the difference is the two configs' means apart, each mean read back from the seeds' own files
            means = {}
            for side in (label, "simcse"):
                files = [tmp_path / "cmp" / side / f"seed-{s}" / "scores.json" for s in (1, 2, 3)]
                scores = [json.loads(f.read_text()) for f in files]
                mine = [
                    r["summary"]["sts_avg"] if task == "sts_avg" else r["tasks"][task]["scores"]["spearman"]
                    for r in scores
                ]
                assert result["scores"][side][task]["per_seed"] == mine
                means[side] = sum(mine) / 3
            # the same scores, summed in another order: float64 rounding stays far below 1e-9 on a 0-100 scale
            assert abs(d["difference"] - (means[label] - means["simcse"])) < 1e-9
    out = capsys.readouterr().out
    assert "mine minus simcse, 3 seeds" in out and "faster minus simcse, 3 seeds" in out and "my-task:" in out
    assert "4 comparison(s) (2 config(s) x 2 task(s))" in out and result["comparisons"] == 4
    assert "sts_avg:" in out
    for run in ("mine/seed-1", "mine/seed-2", "faster/seed-1", "simcse/seed-1", "simcse/seed-2"):
        assert (tmp_path / "cmp" / run / "model" / "modules.json").is_file()
    seeds = {
        yaml.safe_load((tmp_path / "cmp" / r / "config.yaml").read_text())["train"]["seed"]
        for r in ("mine/seed-1", "mine/seed-2")
    }
    assert seeds == {1, 2}
    scores = tmp_path / "cmp" / "mine" / "seed-1" / "scores.json"
    weights = next((tmp_path / "cmp" / "mine" / "seed-1" / "model").rglob("model.safetensors"))
    before = (scores.stat().st_mtime_ns, weights.stat().st_mtime_ns)
    assert main([*argv, "--quiet"]) == 0  # again: every seed finished and scored, nothing redone
    assert (scores.stat().st_mtime_ns, weights.stat().st_mtime_ns) == before
    assert main([*argv, "--quiet", "--start-model", str(tiny_backbone)]) == 0  # the same runs, and the start
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    start = json.loads((tmp_path / "cmp" / "start-model.json").read_text())
    assert result["start_model"]["scores"]["sts_avg"] == start["summary"]["sts_avg"]
    # the start scored at the length the trained models were scored at, with their pooler
    assert start["settings"]["max_seq_length"] == 24 == json.loads(scores.read_text())["settings"]["max_seq_length"]
    d = result["minus_start"]["mine"]["sts_avg"]
    # each config's seed mean minus the start model's one score (float64 sums: 1e-9 on a 0-100 scale)
    assert abs(d["difference"] - (result["scores"]["mine"]["sts_avg"]["mean"] - start["summary"]["sts_avg"])) < 1e-9
    assert set(result["minus_start"]) == {"mine", "faster", "simcse"}
    assert "simcse minus the start model, 3 seeds" in capsys.readouterr().out
    assert (scores.stat().st_mtime_ns, weights.stat().st_mtime_ns) == before  # nothing trained again
    edited = yaml.safe_load(open(first))
    edited["train"]["learning_rate"] = 1e-3
    open(first, "w").write(yaml.safe_dump(edited))  # the same file name, another config: not the runs kept
    assert main(argv) != 0
    assert "asked otherwise" in the_error(capsys.readouterr().err)
    argv[argv.index("1,2,3")] = "1,2,4"  # other seeds into the same folder: refused
    assert main(argv) != 0
    assert "asked otherwise" in the_error(capsys.readouterr().err)


def test_repeated_or_single_seeds_and_a_single_config_are_refused(tiny_backbone, corpus_file, tmp_path, capsys):
    first, second, _ = configs(tiny_backbone, corpus_file, tmp_path)
    assert main(["compare", first, "--output", str(tmp_path / "cmp")]) != 0
    assert "two or more configs" in the_error(capsys.readouterr().err)
    for seeds in ("1,1,2", "1", "1,2"):  # two seeds: their spread understated by half
        assert main(["compare", first, second, "--seeds", seeds, "--output", str(tmp_path / "cmp")]) != 0
        assert "give three or more different seeds" in the_error(capsys.readouterr().err)
    with pytest.raises(SystemExit) as stop:  # argparse's one line, exit 2
        main(["compare", first, second, "--seeds", "1,x", "--output", str(tmp_path / "cmp")])
    assert stop.value.code != 0 and "not a comma-separated list of int" in the_error(capsys.readouterr().err)


def test_seeds_are_comma_separated_and_the_space_form_of_0_2_0_still_parses_with_a_notice(capsys):
    from sentlab.cli import build_parser
    from sentlab.cli.common import joined_seeds

    parser = build_parser()
    base = ["compare", "a.yaml", "b.yaml", "--output", "o"]
    assert parser.parse_args([*base, "--seeds", "4,5,6"]).seeds == [4, 5, 6]
    # one value: the configs may come after it
    assert parser.parse_args(["compare", "--seeds", "4,5,6", "a.yaml", "b.yaml", "--output", "o"]).configs == [
        "a.yaml",
        "b.yaml",
    ]
    assert joined_seeds([*base, "--seeds", "4,5,6"]) == [*base, "--seeds", "4,5,6"]
    assert "deprecated" not in capsys.readouterr().err  # the comma form passes through untouched
    assert parser.parse_args(joined_seeds([*base, "--seeds", "4", "5", "6"])).seeds == [4, 5, 6]
    notice = capsys.readouterr().err
    assert "space-separated seeds are deprecated; write --seeds 4,5,6" in notice and "0.3.0" in notice
    assert joined_seeds([*base, "--seeds", "4,5", "6"])[-1] == "4,5,6"  # a mixed 0.2.0 form too
    capsys.readouterr()
    other = ["train", "x.yaml", "--set", "a=1", "--seeds", "1", "2"]  # a command without --seeds: untouched
    assert joined_seeds(other) == other and joined_seeds([*base, "--", "--seeds", "1", "2"])[-2:] == ["1", "2"]


def test_main_reads_the_space_form_through_the_notice(monkeypatch, capsys):
    """The wiring: `sentlab compare ... --seeds 1 2 3` reaches the command as [1, 2, 3]."""
    from sentlab.cli import compare, main

    seen = {}
    # main builds the parser, which binds the module's handler then: patched before
    monkeypatch.setattr(compare, "cmd_compare", lambda args: seen.update(seeds=args.seeds) or 0)
    assert main(["compare", "a.yaml", "b.yaml", "--seeds", "1", "2", "3", "--output", "o"]) == 0
    assert seen == {"seeds": [1, 2, 3]} and "write --seeds 1,2,3" in capsys.readouterr().err


def test_a_card_whose_data_is_missing_is_refused_before_any_training(tiny_backbone, corpus_file, tmp_path, capsys):
    first, _, baseline = configs(tiny_backbone, corpus_file, tmp_path)
    card = tmp_path / "gone.yaml"
    card.write_text("name: gone\nkind: retrieval\ncorpus: corpus.jsonl\nqueries: queries.jsonl\nqrels: qrels.tsv\n")
    argv = [
        "compare",
        first,
        baseline,
        "--seeds",
        "1,2,3",
        "--task-card",
        str(card),
        "--output",
        str(tmp_path / "cmp"),
    ]
    assert main(argv) != 0
    assert "task card data not found" in the_error(capsys.readouterr().err)
    assert not (tmp_path / "cmp").exists()  # nothing trained
