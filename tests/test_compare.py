"""sentlab compare: two configs over seeds, scored on the same items, the difference with its
interval over seeds and items; finished seeds are not trained again."""

from __future__ import annotations

import json

import yaml

from sentlab.cli import main
from tests.conftest import the_error, tiny_config, write_scored_pairs_card


def configs(tiny_backbone, corpus_file, tmp_path):
    first = tiny_config(tiny_backbone, corpus_file, tmp_path / "unused", max_steps=2).model_dump()
    second = json.loads(json.dumps(first))
    second["loss"]["temperature"] = 0.5  # "your own loss": SimCSE at another temperature
    paths = []
    for name, tree in (("mine", second), ("simcse", first)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(tree))
        paths.append(str(path))
    return paths


def test_two_configs_are_compared_over_seeds_on_the_same_items(tiny_backbone, corpus_file, tmp_path, capsys):
    card = write_scored_pairs_card(tmp_path, corpus_file, "my-task")
    first, second = configs(tiny_backbone, corpus_file, tmp_path)
    argv = ["compare", first, second, "--seeds", "1", "2", "--task-card", str(card), "--output", str(tmp_path / "cmp")]
    assert main([*argv, "--quiet"]) == 0
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert (result["first"], result["second"]) == ("mine", "simcse")
    d = result["tasks"]["my-task"]
    assert len(d["per_seed"]) == 2 and d["low"] <= d["difference"] <= d["high"] and d["seeds"] == 2
    out = capsys.readouterr().out
    assert "mine minus simcse, 2 seeds" in out and "my-task:" in out
    for run in ("mine/seed-1", "mine/seed-2", "simcse/seed-1", "simcse/seed-2"):
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
    edited = yaml.safe_load(open(first))
    edited["train"]["learning_rate"] = 1e-3
    open(first, "w").write(yaml.safe_dump(edited))  # the same file name, another config: not the runs kept
    assert main(argv) != 0
    assert "asked otherwise" in the_error(capsys.readouterr().err)
    argv[argv.index("2")] = "3"  # other seeds into the same folder: refused
    assert main(argv) != 0
    assert "asked otherwise" in the_error(capsys.readouterr().err)


def test_repeated_or_single_seeds_are_refused(tiny_backbone, corpus_file, tmp_path, capsys):
    first, second = configs(tiny_backbone, corpus_file, tmp_path)
    for seeds in (["1", "1"], ["1"]):
        assert main(["compare", first, second, "--seeds", *seeds, "--output", str(tmp_path / "cmp")]) != 0
        assert "two or more different seeds" in the_error(capsys.readouterr().err)
