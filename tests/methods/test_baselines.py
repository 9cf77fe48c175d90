"""TSDAE, CT, MLM, BERT-flow and the supervised stage end to end on a tiny model; CT's labels and
schedule; the flow's likelihood against a hand computation."""

import json

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer

from sentlab.encoders.flow import GlowFlow, standard_normal_log_density
from sentlab.errors import ConfigError
from sentlab.methods import validate_config
from sentlab.methods.ct import ct_pairs
from sentlab.training import engine
from sentlab.training.callbacks import LOSS_STATE_FILE, load_loss_state
from tests.training.test_engine import PROBE, train_until_killed


def method_config(method, backbone, corpus, out, pooler="mean", section=None, data=None, **train):
    tree = {
        "method": method,
        "model": {"name": str(backbone), "pooler": pooler, "max_seq_length": 16},
        "data": {"train": str(corpus), **(data or {})},
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
    if section:
        tree.update(section)
    return validate_config(tree)


@pytest.mark.parametrize(
    "method, pooler, section",
    [
        ("tsdae", "cls", None),
        ("tsdae", "max", {"tsdae": {"noise": "add", "ratio": 0.3, "tie": False}}),
        ("ct", "mean", {"ct": {"lr_segments": None}}),
        ("ct", "mean", {"ct": {"in_batch": True, "lr_segments": None}}),
        ("mlm", "mean", None),
        ("bert-flow", "mean", None),
    ],
)
def test_method_trains_saves_and_reloads(method, pooler, section, tiny_backbone, corpus_file, tmp_path):
    cfg = method_config(
        method, tiny_backbone, corpus_file, tmp_path / "run", pooler, section, max_steps=6, save_steps=3
    )
    before = engine.load_encoder(str(tiny_backbone), pooler=pooler).eval().encode(PROBE)
    paths = engine.train(cfg, evaluate=False)
    losses = [json.loads(line)["loss"] for line in paths.metrics.read_text().splitlines() if '"loss"' in line]
    assert len(losses) == 6 and all(np.isfinite(losses))
    types = [m["type"].rsplit(".", 1)[-1] for m in json.loads((paths.model / "modules.json").read_text())]
    assert types == (["Transformer", "Pooling", "GlowFlow"] if method == "bert-flow" else ["Transformer", "Pooling"])
    if (
        method == "bert-flow"
    ):  # sentlab's own module: plain sentence-transformers refuses it untrusted, as the card says
        with pytest.raises(ValueError, match="GlowFlow"):
            SentenceTransformer(str(paths.model))
        assert "SentenceTransformer(path, trust_remote_code=True)" in (paths.model / "README.md").read_text()
    reloaded = SentenceTransformer(str(paths.model), trust_remote_code=method == "bert-flow")
    after = reloaded.encode(PROBE)
    np.testing.assert_array_equal(after, engine.load_encoder(paths.model).encode(PROBE))
    assert after.shape == before.shape and not np.allclose(after, before)
    if method == "bert-flow":  # the encoder itself is unchanged
        pooled = SentenceTransformer(modules=list(reloaded)[:2]).encode(PROBE)
        np.testing.assert_allclose(pooled, before, atol=1e-6)  # same weights, same path; 1e-6 for BLAS
    # TSDAE's decoder, CT's first encoder and MLM's head transform live in the loss
    has_loss_state = method in ("tsdae", "ct", "mlm")
    assert (paths.checkpoints / "checkpoint-6" / LOSS_STATE_FILE).is_file() == has_loss_state


def test_tsdae_resume_restores_the_decoder_and_matches_an_uninterrupted_run(
    tiny_backbone, corpus_file, tmp_path, monkeypatch
):
    full = engine.train(
        method_config("tsdae", tiny_backbone, corpus_file, tmp_path / "full", "cls", max_steps=8, save_steps=4),
        evaluate=False,
    )
    cfg = method_config("tsdae", tiny_backbone, corpus_file, tmp_path / "crash", "cls", max_steps=8, save_steps=4)
    train_until_killed(cfg, 6, monkeypatch)
    resumed = engine.train(cfg, resume=True, evaluate=False)
    a = SentenceTransformer(str(full.model)).encode(PROBE)
    b = SentenceTransformer(str(resumed.model)).encode(PROBE)
    # same float32 steps after a resume; a decoder started afresh would move the encoder by ~lr per step
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_checkpoint_without_loss_state_is_refused(tiny_backbone, corpus_file, tmp_path):
    cfg = method_config("tsdae", tiny_backbone, corpus_file, tmp_path / "run", "cls", max_steps=2, save_steps=2)
    paths = engine.train(cfg, evaluate=False)
    checkpoint = paths.checkpoints / "checkpoint-2"
    (checkpoint / LOSS_STATE_FILE).unlink()  # as if killed between the model and the loss state
    trainer = engine.build_trainer(cfg, paths)
    with pytest.raises(ConfigError, match="delete this checkpoint"):
        load_loss_state(trainer.loss, trainer.model, checkpoint)


def test_ct_pairs_one_identical_to_k_different_with_labels_by_identity():
    sentences = [f"s{i}" for i in range(40)] + ["s0"] * 8  # duplicates: a "different" pair can be identical
    rows = ct_pairs(sentences, k=7, seed=0)
    assert len(rows["label"]) == len(sentences)
    for i, (a, b, y) in enumerate(zip(rows["sentence_a"], rows["sentence_b"], rows["label"])):
        assert y == float(a == b)
        if i % 8 == 0:
            assert a == b
    assert sum(rows["label"]) >= len(sentences) / 8
    assert ct_pairs(sentences, 7, 0) == rows and ct_pairs(sentences, 7, 1) != rows


def test_ct_uses_rmsprop_and_the_segmented_schedule_of_app_b(tiny_backbone, corpus_file, tmp_path):
    cfg = method_config("ct", tiny_backbone, corpus_file, tmp_path / "run", learning_rate=1e-5, max_steps=3000)
    trainer = engine.build_trainer(cfg, engine.RunPaths(tmp_path / "run"))
    trainer.create_optimizer_and_scheduler(num_training_steps=3000)
    assert isinstance(trainer.optimizer, torch.optim.RMSprop) or "RMSprop" in type(trainer.optimizer.optimizer).__name__
    learning_rates = {}
    for step in range(1, 2502):  # the lr used at optimizer step `step`
        learning_rates[step] = trainer.lr_scheduler.get_last_lr()[0]
        trainer.optimizer.step()  # no gradients: a no-op, in the order torch expects
        trainer.lr_scheduler.step()
    expected = {
        1: 1e-5,
        500: 1e-5,
        501: 8e-6,
        1000: 8e-6,
        1001: 6e-6,
        1500: 6e-6,
        1501: 4e-6,
        2000: 4e-6,
        2001: 2e-6,
        2500: 2e-6,
    }
    for step, lr in expected.items():
        assert learning_rates[step] == pytest.approx(lr, rel=1e-9), step
    params = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    assert all(id(p) in params for p in trainer.loss.model1.parameters())  # both encoders train


def test_ct_segments_must_be_well_formed(tiny_backbone, corpus_file, tmp_path):
    with pytest.raises(Exception, match="lr_segments"):
        method_config("ct", tiny_backbone, corpus_file, tmp_path, section={"ct": {"lr_segments": [[500, 1e-5]]}})


def test_mlm_masks_only_ordinary_tokens_and_ties_the_head(tiny_backbone):
    from sentlab.encoders import build_encoder
    from sentlab.methods.mlm import MLMLoss

    model = build_encoder(str(tiny_backbone), "mean")
    loss = MLMLoss(model, probability=0.5)
    encoder = model[0].auto_model
    assert loss.head.get_output_embeddings().weight is encoder.embeddings.word_embeddings.weight
    ids = model.preprocess(["a man plays the guitar in the park"] * 256)["input_ids"].to(model.device)
    torch.manual_seed(0)
    inputs, targets = loss.mask_tokens(ids.clone())
    chosen = targets != -100
    assert not chosen[:, 0].any() and not chosen[:, -1].any()  # [CLS] / [SEP] never chosen
    assert 0.4 < chosen[:, 1:-1].float().mean() < 0.6
    assert (targets[chosen] == ids[chosen]).all()
    masked = inputs[chosen] == model.tokenizer.mask_token_id
    assert 0.7 < masked.float().mean() < 0.9  # 80 % of the chosen become [MASK]
    kept = inputs[chosen] == ids[chosen]  # 10 % stay, and a random token equals the original ~1/60 of the time
    assert 0.05 < kept.float().mean() < 0.16
    assert (inputs[~chosen] == ids[~chosen]).all()  # nothing else changes
    assert inputs.device == targets.device == ids.device


def tiny_flow(dimension=4):
    torch.manual_seed(0)
    flow = GlowFlow(dimension, steps=2, hidden_channels=8, seed=1)
    flow.train()
    u = torch.randn(64, dimension) * 3 + 1
    flow({"sentence_embedding": u})  # ActNorm's data-dependent initialisation
    with torch.no_grad():  # move the coupling nets off their zero initialisation
        for p in flow.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return flow.eval(), u


def test_flow_log_likelihood_matches_change_of_variables_by_hand():
    flow, u = tiny_flow()
    for row in u[:5]:
        z, log_likelihood = flow.latent_and_log_likelihood(row[None])

        def to_latent(x):
            return flow.flow.inverse(x[None, :, None, None]).flatten()

        jacobian = torch.autograd.functional.jacobian(to_latent, row)
        by_hand = standard_normal_log_density(to_latent(row)[None]) + torch.linalg.slogdet(jacobian)[1]
        # the library's log-det (LU / affine terms) vs autograd's Jacobian: same float32 function, rounding ~1e-6
        torch.testing.assert_close(log_likelihood, by_hand.reshape(1), rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(z, to_latent(row)[None])


def test_flow_inverse_round_trip_and_save_load(tmp_path):
    flow, u = tiny_flow()
    with torch.no_grad():
        z = flow({"sentence_embedding": u.clone()})["sentence_embedding"]
        # z -> u through the generative direction: float32 matrix inverses, error ~1e-5 on |u| ~ 3
        torch.testing.assert_close(flow.sample_inverse(z), u, rtol=1e-4, atol=1e-4)
        flow.save(str(tmp_path))
        again = GlowFlow.load(str(tmp_path)).eval()
        torch.testing.assert_close(again({"sentence_embedding": u.clone()})["sentence_embedding"], z, rtol=0, atol=0)


def test_supervised_stage_and_pipeline_chain(tiny_backbone, corpus_file, tmp_path):
    from sentlab.cli import main

    table = tmp_path / "pairs.tsv"
    lines = corpus_file.read_text().splitlines()
    table.write_text(
        "a\tb\tscore\n" + "".join(f"{x}\t{y}\t{i % 6}\n" for i, (x, y) in enumerate(zip(lines, lines[1:]))),
        encoding="utf-8",
    )
    stage1 = tmp_path / "tsdae.yaml"
    stage1.write_text(method_config("tsdae", tiny_backbone, corpus_file, tmp_path / "s1", "cls", max_steps=2).to_yaml())
    sup = method_config(
        "supervised",
        tiny_backbone,
        table,
        tmp_path / "s2",
        "cls",
        max_steps=2,
        section={"supervised": {"loss": "cosine-mse", "score_range": [0, 5]}},
    )
    tree = sup.to_tree()
    tree["data"]["columns"] = ["a", "b", "score"]
    tree["model"]["pooler"] = None
    import yaml

    stage2 = tmp_path / "sup.yaml"
    stage2.write_text(yaml.safe_dump(tree))
    assert main(["pipeline", str(stage1), str(stage2), "--no-eval", "--quiet"]) == 0
    used = yaml.safe_load((tmp_path / "s2" / "config.yaml").read_text())
    assert used["model"]["name"] == str(tmp_path / "s1" / "model")  # stage 2 started from stage 1's model
    first = SentenceTransformer(str(tmp_path / "s1" / "model")).encode(PROBE)
    second = SentenceTransformer(str(tmp_path / "s2" / "model")).encode(PROBE)
    assert not np.allclose(first, second)
    mtime = (tmp_path / "s1" / "model" / "modules.json").stat().st_mtime
    assert main(["pipeline", str(stage1), str(stage2), "--no-eval", "--quiet"]) == 0  # finished stages are kept
    assert (tmp_path / "s1" / "model" / "modules.json").stat().st_mtime == mtime


def test_supervised_reads_snli_triplets(data_dir, tiny_backbone, tmp_path):
    from sentlab.methods.supervised import Supervised

    cfg = method_config(
        "supervised",
        tiny_backbone,
        data_dir / "senteval/downstream/SNLI",
        tmp_path / "r",
        section={"supervised": {"format": "snli", "split": "dev"}},
        max_steps=1,
    )
    dataset = Supervised(cfg, engine.RunPaths(tmp_path / "r")).train_dataset()
    assert dataset.column_names == ["anchor", "positive", "negative"] and len(dataset) > 2500


def test_ct_segments_leave_no_scheduler_setting_that_would_not_run(tiny_backbone, corpus_file, tmp_path):
    """ct.lr_segments sets every step's learning rate: the trainer's schedule, its kwargs and a warm-up are
    refused in one line (they would be recorded as used and do nothing), and accepted without segments."""
    for train, message in [
        ({"trainer_args": {"lr_scheduler_type": "cosine"}}, "lr_scheduler_type: ct.lr_segments sets every step"),
        ({"trainer_args": {"lr_scheduler_kwargs": {"num_cycles": 2}}}, "lr_scheduler_kwargs: ct.lr_segments sets"),
        ({"warmup_ratio": 0.1}, "train.warmup_ratio: method ct does not read it; ct.lr_segments sets every step"),
        ({"trainer_args": {"adam_beta2": 0.98}}, "adam_beta2: ct.optimizer rmsprop has no Adam settings"),
    ]:
        with pytest.raises(ValueError, match=message):
            method_config("ct", tiny_backbone, corpus_file, tmp_path / "run", **train)
    free = {"ct": {"lr_segments": None, "optimizer": "adamw"}}
    cfg = method_config(
        "ct",
        tiny_backbone,
        corpus_file,
        tmp_path / "run",
        section=free,
        warmup_ratio=0.1,
        trainer_args={"lr_scheduler_type": "cosine", "adam_beta2": 0.98},
    )
    assert cfg.train.trainer_args["lr_scheduler_type"] == "cosine"


def test_ct_in_batch_scales_by_the_one_temperature_and_the_moved_ct_scale_converts(
    tiny_backbone, corpus_file, tmp_path, capsys, monkeypatch
):
    """CT in-batch starts its learnt scale at 1 / loss.temperature (unset: 20, the class's default); labelled-pair CT has no scale and refuses the key; ct.scale (0.2.0) is read as
    loss.temperature = 1 / ct.scale, in a file or as --set, and at its old default (20) moves nothing."""
    import hashlib

    from sentlab.methods import load_config
    from sentlab.methods.ct import CT
    from sentlab.training import config
    from sentlab.training.run_folder import learned_settings, run_fingerprint

    monkeypatch.setattr(config, "_NOTICED", set())
    in_batch = {"ct": {"in_batch": True, "lr_segments": None}}
    cfg = method_config("ct", tiny_backbone, corpus_file, tmp_path / "run", section=in_batch)
    method = CT(cfg, engine.RunPaths(tmp_path / "run"))

    def scale(loss):  # the class learns its scale, from log(scale): float32's log then exp, within 1e-6
        return float(loss.logit_scale.detach().exp())

    assert scale(method.loss(method.build_model())) == pytest.approx(20.0, rel=1e-6)
    cfg.loss.temperature = 0.125
    assert scale(method.loss(method.build_model())) == pytest.approx(8.0, rel=1e-6)
    with pytest.raises(
        ValueError, match="loss.temperature: method ct does not read it; CT with labelled pairs scores by a plain dot"
    ):
        method_config("ct", tiny_backbone, corpus_file, tmp_path / "run", section={"loss": {"temperature": 0.1}})
    tree = method_config("ct", tiny_backbone, corpus_file, tmp_path / "run", section=in_batch).to_tree()
    tree["ct"]["scale"] = 8.0
    path = tmp_path / "ct.yaml"
    path.write_text(json.dumps(tree))  # JSON is YAML
    assert load_config(path).loss.temperature == 0.125
    assert "ct.scale is deprecated: it is loss.temperature = 1 / ct.scale" in capsys.readouterr().err
    del tree["ct"]["scale"]
    path.write_text(json.dumps(tree))
    assert load_config(path, ["ct.scale=4"]).loss.temperature == 0.25
    tree["ct"]["scale"] = 20.0  # its old default, as a 0.2.0 run folder's config lists it: not a setting
    path.write_text(json.dumps(tree))
    capsys.readouterr()
    assert load_config(path).loss.temperature == 0.05 and "ct.scale" not in capsys.readouterr().err
    # the fingerprint hashes the tree 0.2.0 wrote (ct.scale 8, loss.temperature 0.05): its run is found again
    tree["ct"]["scale"] = 8.0
    path.write_text(json.dumps(tree))
    moved = load_config(path)
    written = learned_settings(moved.model_dump())
    written["ct"]["scale"], written["loss"]["temperature"] = 8.0, 0.05
    for added in config.ADDED_SINCE_RELEASE:  # keys 0.2.0 did not have, at their defaults
        section, key = added.split(".")
        written.get(section, {}).pop(key, None)  # a section of another method is not there
    digest = hashlib.sha256(json.dumps(written, sort_keys=True, default=str).encode()).hexdigest()
    assert run_fingerprint(moved)["config_sha256"] == digest


def v020_digest(cfg, **as_written) -> str:
    """The config digest 0.2.0 wrote for ``cfg``'s settings with its own keys ``as_written``
    (``ct__scale=49``): its learned settings, the keys added since left out, loss.temperature at its
    default where the old key held the value."""
    import hashlib

    from sentlab.training import config
    from sentlab.training.run_folder import learned_settings

    written = learned_settings(cfg.model_dump())
    for added in config.ADDED_SINCE_RELEASE:
        section, key = added.split(".")
        written.get(section, {}).pop(key, None)  # a section of another method is not there
    written["loss"]["temperature"] = 0.05
    for dotted, value in as_written.items():
        node = written
        *parents, key = dotted.split("__")
        for part in parents:
            node = node[part]
        node[key] = value
    return hashlib.sha256(json.dumps(written, sort_keys=True, default=str).encode()).hexdigest()


def test_a_v020_temperature_key_keeps_its_runs_fingerprint_exactly(tiny_backbone, corpus_file, tmp_path, capsys):
    """0.2.0's scale keys, as written, give 0.2.0's fingerprint: ct.scale 49 (not 49.00000000000001), an
    explicit supervised.scale 20 (not unset), a loss's own loss_args.scale; CT with labelled pairs never
    read ct.scale: it is dropped with a notice, not refused, and a --set of it names itself in errors."""
    from sentlab.methods import load_config
    from sentlab.training.config import scale_of
    from sentlab.training.run_folder import run_fingerprint

    in_batch = {"ct": {"in_batch": True, "lr_segments": None, "scale": 49}}
    cfg = method_config("ct", tiny_backbone, corpus_file, tmp_path / "run", section=in_batch)
    assert run_fingerprint(cfg)["config_sha256"] == v020_digest(cfg, ct__scale=49.0)  # 0.2.0 typed it a float
    assert scale_of(cfg.loss.temperature) == 49.0  # the loss gets the scale written, not its reciprocal's rounding
    supervised = {"supervised": {"loss": "mnrl", "scale": 20}}
    cfg = method_config("supervised", tiny_backbone, corpus_file, tmp_path / "run", section=supervised)
    assert run_fingerprint(cfg)["config_sha256"] == v020_digest(cfg, supervised__scale=20.0)
    # the run's own dumped config (loss.temperature 0.04, no old key) is the same run as supervised.scale 25
    old = method_config(
        "supervised",
        tiny_backbone,
        corpus_file,
        tmp_path / "run",
        section={"supervised": {"loss": "mnrl", "scale": 25}},
    )
    dumped = method_config(
        "supervised",
        tiny_backbone,
        corpus_file,
        tmp_path / "run",
        section={"supervised": {"loss": "mnrl"}, "loss": {"temperature": 0.04}},
    )
    assert run_fingerprint(old) == run_fingerprint(dumped) and run_fingerprint(old)["config_sha256"] == v020_digest(
        old, supervised__scale=25.0
    )
    arguments = {"supervised": {"loss": "mnrl", "loss_args": {"scale": 8}}}
    cfg = method_config("supervised", tiny_backbone, corpus_file, tmp_path / "run", section=arguments)
    assert cfg.loss.temperature == 0.125
    expected = v020_digest(cfg, supervised__loss_args={"scale": 8}, supervised__scale=None)
    assert run_fingerprint(cfg)["config_sha256"] == expected
    # labelled-pair CT: 0.2.0 accepted ct.scale and read nothing; it still does, and says so
    pairs = {"ct": {"scale": 30, "lr_segments": None}}
    cfg = method_config("ct", tiny_backbone, corpus_file, tmp_path / "run", section=pairs)
    assert cfg.loss.temperature == 0.05 and "CT with labelled pairs has no scale" in capsys.readouterr().err
    assert run_fingerprint(cfg)["config_sha256"] == v020_digest(cfg, ct__scale=30.0)
    # a --set of the old key: an error about it names the --set given, not one converted from it
    path = tmp_path / "ct.yaml"
    tree = method_config("ct", tiny_backbone, corpus_file, tmp_path / "run", section=in_batch).to_tree()
    path.write_text(json.dumps(tree))
    with pytest.raises(ConfigError, match=r"^--set ct.scale=-3: loss.temperature"):
        load_config(path, ["ct.scale=-3"])


def test_the_trainers_own_settings_pass_through_checked_and_are_read_back(tiny_backbone, corpus_file, tmp_path):
    """train.trainer_args reaches SentenceTransformerTrainingArguments and runtime.json reads it back; an
    unknown key is one line with the closest names, a key sentlab sets names sentlab's setting, and
    gradient accumulation is refused where a batch's rows are each other's negatives."""
    given = {"gradient_checkpointing": True, "max_grad_norm": 0.5, "lr_scheduler_type": "constant"}
    cfg = method_config("tsdae", tiny_backbone, corpus_file, tmp_path / "run", max_steps=2, trainer_args=given)
    paths = engine.train(cfg, evaluate=False)
    ran = json.loads(paths.runtime.read_text())["trainer_args"]
    assert ran == {"gradient_checkpointing": True, "max_grad_norm": 0.5, "lr_scheduler_type": "constant"}
    for trainer_args, message in [
        (
            {"gradient_checkpointin": True},
            r"gradient_checkpointin: not an argument .*did you mean gradient_checkpointing",
        ),
        ({"per_device_train_batch_size": 8}, "per_device_train_batch_size: sentlab.s own setting is train.batch_size"),
        ({"gradient_accumulation_steps": 0}, "gradient_accumulation_steps: a whole number of at least 1"),
        # keys that would defeat sentlab's own handling: each names sentlab's setting or what it would break
        ({"save_only_model": True}, "save_only_model: refused, since --resume needs the optimizer, scheduler"),
        ({"torch_compile_mode": "max-autotune"}, "torch_compile_mode: sentlab.s own setting is train.compile"),
        ({"resume_from_checkpoint": "x"}, "resume_from_checkpoint: sentlab.s own setting is sentlab train --resume"),
        ({"push_to_hub": True}, "push_to_hub: sentlab.s own setting is sentlab push"),
        ({"debug": "underflow_overflow"}, "debug: not one of the trainer's arguments sentlab passes through"),
        # values checked against the trainer's types when the config is read, before any data
        ({"max_grad_norm": "abc"}, "max_grad_norm: 'abc' is not a float"),
        ({"gradient_checkpointing": "yes"}, "gradient_checkpointing: 'yes' is not a bool"),
        ({"lr_scheduler_type": "bogus"}, "lr_scheduler_type: 'bogus' is not one of linear, cosine"),
    ]:
        with pytest.raises(ValueError, match=message):
            method_config("tsdae", tiny_backbone, corpus_file, tmp_path / "run", trainer_args=trainer_args)
    accumulated = {"gradient_accumulation_steps": 2}
    cfg = method_config("simcse-unsup", tiny_backbone, corpus_file, tmp_path / "simcse", trainer_args=accumulated)
    with pytest.raises(ConfigError, match="gradient_accumulation_steps: simcse-unsup scores each row against"):
        engine.train(cfg, evaluate=False)
    cfg = method_config("tsdae", tiny_backbone, corpus_file, tmp_path / "acc", max_steps=2, trainer_args=accumulated)
    assert json.loads(engine.train(cfg, evaluate=False).runtime.read_text())["trainer_args"] == accumulated
