import json
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer

from sentlab.data import relations as rel
from sentlab.errors import ConfigError
from sentlab.evaluation.relational import RELATION_TABLE, RelationalScorer, RelationTable
from sentlab.methods import validate_config
from sentlab.training import engine
from tests.training.test_engine import PROBE


def rse_config(backbone, qqp, text, out, **train):
    return validate_config(
        {
            "method": "rse",
            "model": {"name": str(backbone), "pooler": "cls", "max_seq_length": 16},
            "data": {},  # RSE reads rse.sources, never data.train
            "rse": {
                "sources": [
                    {"relation": "duplicate_question", "path": str(qqp), "format": "qqp"},
                    {"relation": "same_sent", "path": str(text), "format": "text", "cap": 40},
                ],
                "weights": {"duplicate_question": 1.0},
            },
            "train": {
                "output_dir": str(out),
                "batch_size": 8,
                "learning_rate": 5e-4,
                "logging_steps": 1,
                "progress_bar": False,
                **train,
            },
            "eval": {"dev_task": "none", "final_tasks": []},
        }
    )


def test_rse_trains_with_its_own_relation_lr_and_saves_a_loadable_folder(
    tiny_backbone, corpus_file, qqp_file, tmp_path
):
    cfg = rse_config(tiny_backbone, qqp_file, corpus_file, tmp_path / "run", max_steps=4)
    trainer = engine.build_trainer(cfg, engine.RunPaths(tmp_path / "run"))
    assert len(trainer.train_dataset) == 47 + 40  # 47 duplicates of 95 QQP rows, 40 of 96 plain sentences
    trainer.create_optimizer()
    groups = [g for g in trainer.optimizer.param_groups if any(p is trainer.loss.relation_vectors for p in g["params"])]
    assert len(groups) == 1 and groups[0]["lr"] == 1e-2 and len(groups[0]["params"]) == 1
    paths = engine.train(cfg, evaluate=False)
    table = RelationTable.load(paths.model, 32)
    assert table.names == ["duplicate_question", "same_sent"] and table.weights == {"duplicate_question": 1.0}
    assert table.vectors.shape == (2, 32) and np.abs(table.vectors).max() > 0
    types = [m["type"].rsplit(".", 1)[-1] for m in json.loads((paths.model / "modules.json").read_text())]
    assert types == ["Transformer", "Pooling", "Dense"]  # RSE's MLP kept at inference
    a = SentenceTransformer(str(paths.model)).encode(PROBE)
    np.testing.assert_array_equal(a, engine.load_encoder(paths.model).encode(PROBE))
    # the folder round trip: plain sentence-transformers load + table = sentlab's load, score for score
    plain = RelationalScorer(SentenceTransformer(str(paths.model)), RelationTable.load(paths.model, 32))
    ours = RelationalScorer(engine.load_encoder(paths.model), table)
    np.testing.assert_array_equal(plain.relation_scores(PROBE, PROBE[::-1]), ours.relation_scores(PROBE, PROBE[::-1]))
    with pytest.raises(ConfigError, match="relation table is"):
        RelationTable.load(paths.model, 64)
    (paths.model / RELATION_TABLE).unlink()
    with pytest.raises(ConfigError, match="no readable RSE relation table"):
        RelationTable.load(paths.model, 32)


def test_rse_needs_sources_and_known_weight_names(tiny_backbone, corpus_file, qqp_file, tmp_path):
    tree = rse_config(tiny_backbone, qqp_file, corpus_file, tmp_path / "r").to_tree()
    tree["rse"]["weights"] = {"entailment": 1.0}
    cfg = validate_config(tree)
    with pytest.raises(ConfigError, match="rse.weights names relations without data: entailment"):
        engine.build_trainer(cfg, engine.RunPaths(tmp_path / "r"))
    del tree["rse"]
    with pytest.raises(Exception, match="needs a 'rse' section"):
        validate_config(tree)


def test_dev_selection_uses_the_relational_score_and_saves_the_selected_relation_vectors(
    tiny_backbone, corpus_file, qqp_file, data_dir, tmp_path
):
    from safetensors.torch import load_file

    tree = rse_config(
        tiny_backbone, qqp_file, corpus_file, tmp_path / "run", max_steps=6, eval_steps=2, learning_rate=5e-3
    ).to_tree()
    tree["data"]["data_dir"] = str(data_dir)
    tree["eval"] = {"dev_task": "STS-B", "dev_limit": 60, "final_tasks": []}
    tree["rse"]["relation_lr"] = 0.5  # the vectors move a lot between checkpoints
    cfg = validate_config(tree)
    trainer = engine.build_trainer(cfg, engine.RunPaths(tmp_path / "probe"))
    # the dev score is the relational mix of the vectors being trained: scored by hand it agrees
    from scipy.stats import spearmanr

    evaluator = trainer.evaluator
    with torch.no_grad():
        trainer.loss.relation_vectors.normal_(0, 1.0)
    table = RelationTable(
        trainer.loss.relations, trainer.loss.relation_vectors.detach().cpu().numpy(), {"duplicate_question": 1.0}
    )
    expected = spearmanr(
        evaluator.base.scores,
        RelationalScorer(trainer.model, table).score(evaluator.base.sentences1, evaluator.base.sentences2),
    )[0]
    assert evaluator(trainer.model)["stsb-dev_spearman_cosine"] == pytest.approx(expected, abs=1e-12)
    paths = engine.train(cfg, evaluate=False)
    state = json.loads(
        max(
            paths.checkpoints.glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name.split("-")[1])
        ).read_text()
    )
    best = Path(state["best_model_checkpoint"])
    saved = RelationTable.load(paths.model, 32).vectors
    np.testing.assert_array_equal(
        saved, load_file(str(best / "loss_state.safetensors"))["relation_vectors"].cpu().numpy()
    )


def test_all_above_merges_the_sources_into_plain_pairs_and_saves_a_plain_model(
    tiny_backbone, corpus_file, qqp_file, tmp_path
):
    tree = rse_config(tiny_backbone, qqp_file, corpus_file, tmp_path / "run", max_steps=2).to_tree()
    tree["rse"]["merge_relations"] = True
    cfg = validate_config(tree)
    trainer = engine.build_trainer(cfg, engine.RunPaths(tmp_path / "probe"))
    assert trainer.train_dataset.column_names == ["head", "tail", "label"]  # no in-relation negatives
    assert set(trainer.train_dataset["label"]) == {0}
    assert not list(trainer.loss.parameters()) or all(
        p is not trainer.loss.relation_vectors for p in trainer.loss.parameters()
    )
    paths = engine.train(cfg, evaluate=False)
    assert not RelationTable.is_saved_in(paths.model)  # a plain sentence-transformers model, scored by cosine
    SentenceTransformer(str(paths.model)).encode(PROBE)


def test_a_dev_task_card_is_scored_with_the_relational_mix(tiny_backbone, corpus_file, qqp_file, tmp_path):
    lines = corpus_file.read_text().splitlines()
    (tmp_path / "dev.tsv").write_text(
        "s1\ts2\tscore\n" + "".join(f"{lines[i]}\t{lines[i + 1]}\t{i % 5}\n" for i in range(0, 40, 2)), encoding="utf-8"
    )
    (tmp_path / "dev.yaml").write_text(
        "name: mine\nkind: scored-pairs\nfile: dev.tsv\ncolumns: [s1, s2, score]\n", encoding="utf-8"
    )
    tree = rse_config(tiny_backbone, qqp_file, corpus_file, tmp_path / "run", max_steps=2).to_tree()
    tree["eval"] = {"dev_task": str(tmp_path / "dev.yaml"), "final_tasks": []}
    trainer = engine.build_trainer(validate_config(tree), engine.RunPaths(tmp_path / "probe"))
    from scipy.stats import spearmanr

    with torch.no_grad():
        trainer.loss.relation_vectors.normal_(0, 1.0)
    table = RelationTable(
        trainer.loss.relations, trainer.loss.relation_vectors.detach().cpu().numpy(), {"duplicate_question": 1.0}
    )
    pairs = [line.split("\t") for line in (tmp_path / "dev.tsv").read_text().splitlines()[1:]]
    expected = spearmanr(
        [float(p[2]) for p in pairs],
        RelationalScorer(trainer.model, table).score([p[0] for p in pairs], [p[1] for p in pairs]),
    )[0]
    # the same model scores the same pairs twice in one process: equal up to float64 rounding
    assert trainer.evaluator(trainer.model)["mine_spearman"] == pytest.approx(expected, abs=1e-12)
    assert trainer.args.metric_for_best_model == "eval_mine_spearman"


def test_dev_direction_max_scores_dev_as_the_released_code(tiny_backbone, corpus_file, qqp_file, data_dir, tmp_path):
    """rse.dev_direction: max takes the larger of f(s1, s2, r) and f(s2, s1, r) per pair (the released
    code's STS-B dev scoring); forward (the default, the paper's) takes f(s1, s2, r)."""
    from scipy.stats import spearmanr

    tree = rse_config(tiny_backbone, qqp_file, corpus_file, tmp_path / "run", max_steps=2).to_tree()
    tree["data"]["data_dir"] = str(data_dir)
    tree["eval"] = {"dev_task": "STS-B", "dev_limit": 80, "final_tasks": []}
    scores = {}
    for direction in ("forward", "max"):
        tree["rse"]["dev_direction"] = direction
        trainer = engine.build_trainer(validate_config(tree), engine.RunPaths(tmp_path / direction))
        with torch.no_grad():
            trainer.loss.relation_vectors.copy_(
                torch.linspace(-2, 2, trainer.loss.relation_vectors.numel()).reshape(
                    trainer.loss.relation_vectors.shape
                )
            )
        evaluator = trainer.evaluator
        table = RelationTable(
            trainer.loss.relations, trainer.loss.relation_vectors.detach().cpu().numpy(), {"duplicate_question": 1.0}
        )
        scorer = RelationalScorer(trainer.model, table)  # forward, checked by hand against both directions
        a, b = evaluator.base.sentences1, evaluator.base.sentences2
        forward, backward = scorer.score(a, b), scorer.score(b, a)
        by_hand = forward if direction == "forward" else np.maximum(forward, backward)
        scores[direction] = evaluator(trainer.model)["stsb-dev_spearman_cosine"]
        assert scores[direction] == pytest.approx(spearmanr(evaluator.base.scores, by_hand)[0], abs=1e-12)
    assert scores["forward"] != scores["max"]


def test_the_triples_are_a_cached_memory_mapped_table_rebuilt_when_a_source_changes(
    tiny_backbone, corpus_file, qqp_file, tmp_path, monkeypatch, isolated_cache
):
    from sentlab.methods import rse as rse_method

    reads = []
    real = rse_method.read_source
    monkeypatch.setattr(rse_method, "read_source", lambda source: reads.append(source.format) or real(source))
    table = rse_method.sentence_table
    monkeypatch.setattr(rse_method, "sentence_table", lambda path: reads.append("text") or table(path))
    cfg = rse_config(tiny_backbone, qqp_file, corpus_file, tmp_path / "run")
    method = rse_method.RSE(cfg, engine.RunPaths(tmp_path / "run"))
    rows = method.train_dataset()
    assert reads == ["qqp", "text"] and len(rows) == 87 and rows.cache_files  # memory-mapped
    assert len(method.train_dataset()) == 87 and reads == ["qqp", "text"]  # cached: nothing read again
    with corpus_file.open("a", encoding="utf-8") as handle:
        handle.write("one more plain sentence\n")
    assert len(method.train_dataset()) == 87 and reads == ["qqp", "text"] * 2  # a changed source: rebuilt
    # a folder of its own (a run still reading the earlier triples keeps them); the cap evicts the old one
    assert len([f for f in (isolated_cache / "rse").iterdir() if f.is_dir()]) == 2
    limited = rse_method.RSE(cfg.model_copy(update={"data": cfg.data.model_copy(update={"limit": 10})}), method.paths)
    assert len(limited.train_dataset()) == 10 and reads[4:] == ["qqp"]  # the limit met in the first source
    # a plain text's cap keeps the rows cap_per_relation keeps of the list the text was read into before
    text_source = cfg.rse.sources[1]
    expected = rel.cap_per_relation(rel.read_same_sent(corpus_file), {"same_sent": 40}, seed=7 + 1)
    assert list(rse_method.iter_sources(cfg.rse.sources, seed=7))[47:] == expected and text_source.cap == 40


def test_a_source_that_changes_while_it_is_read_stops_and_leaves_no_table(
    tiny_backbone, corpus_file, qqp_file, tmp_path, monkeypatch, isolated_cache
):
    from sentlab.errors import DataError
    from sentlab.methods import rse as rse_method

    real = rse_method.read_source

    def read_then_change(source):
        triples = real(source)
        with qqp_file.open("a", encoding="utf-8") as handle:  # another process still writing the file
            handle.write("1\tanother question?\tthe same question?\t999\n")
        return triples

    monkeypatch.setattr(rse_method, "read_source", read_then_change)
    method = rse_method.RSE(rse_config(tiny_backbone, qqp_file, corpus_file, tmp_path / "r"), engine.RunPaths(tmp_path))
    with pytest.raises(DataError, match="qqp.tsv: changed while it was being read"):
        method.train_dataset()
    assert not any(f.is_dir() for f in (isolated_cache / "rse").iterdir())  # no folder, partial or complete


def test_a_valid_cache_is_read_without_a_write_into_its_tables(
    tiny_backbone, qqp_file, corpus_file, tmp_path, isolated_cache
):
    """A read-only cache works for what sentlab does with a table: once RSE's tables exist, a second
    run (a capped sample of a text source: a selection of rows) writes nothing into their folders."""
    cfg = rse_config(tiny_backbone, qqp_file, corpus_file, tmp_path / "a", max_steps=1)
    engine.train(cfg, evaluate=False)
    tables = [p for p in (isolated_cache / "text").iterdir() if p.is_dir() and not p.name.startswith(".")]
    before = {p: p.stat().st_mtime_ns for folder in tables for p in folder.rglob("*")}
    engine.train(rse_config(tiny_backbone, qqp_file, corpus_file, tmp_path / "b", max_steps=1), evaluate=False)
    assert {p: p.stat().st_mtime_ns for folder in tables for p in folder.rglob("*")} == before


def test_rse_in_chunks_with_a_dev_task_scores_and_resumes_with_its_relation_vectors(
    tiny_backbone, corpus_file, qqp_file, fake_sts_dir, tmp_path
):
    """Gradient Cache wraps the loss; the dev evaluator still reads the relation vectors, and the
    checkpoint's loss state is named as without chunks, so a run resumes whether or not it chunks."""
    import json

    cfg = rse_config(
        tiny_backbone, qqp_file, corpus_file, tmp_path / "run", max_steps=2, eval_steps=1, mini_batch_size=3
    )
    tree = cfg.to_tree()
    tree["eval"] = {"dev_task": "STS-B", "final_tasks": []}
    tree["data"] = {"data_dir": str(fake_sts_dir)}
    paths = engine.train(type(cfg).model_validate(tree), evaluate=False)
    assert json.loads(paths.runtime.read_text())["chunking"]["mini_batch_size"] == 3
    assert json.loads(paths.selection.read_text())["best_checkpoint"] is not None  # the dev task scored
    from safetensors.torch import load_file

    checkpoint = sorted(paths.checkpoints.glob("checkpoint-*"))[-1]
    assert set(load_file(str(checkpoint / "loss_state.safetensors"))) == {"relation_vectors"}
    tree["train"]["mini_batch_size"] = None  # resumed without chunks: the same loss state
    tree["train"]["max_steps"] = 3
    engine.train(type(cfg).model_validate(tree), resume=True, evaluate=False, allow_changed=True)
