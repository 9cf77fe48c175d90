"""Bad input and bad options: one line on stderr and a non-zero exit, never a silent default or a traceback."""

from __future__ import annotations

import json

import pytest
import torch

from sentlab.cli import main
from sentlab.encoders import build_encoder
from tests.conftest import the_error


@pytest.fixture
def tiny_st_model(tiny_backbone, tmp_path):
    path = tmp_path / "tiny-st"
    build_encoder(str(tiny_backbone), "mean").save(str(path))
    return path


def one_line_error(capsys, argv, expected: str, code: int = 2) -> None:
    try:
        result = main(argv)
    except SystemExit as stop:  # argparse refuses the option itself
        result = stop.code
    err = capsys.readouterr().err
    assert result == code, err
    assert expected in the_error(err)


@pytest.mark.parametrize(
    "option, value, expected",
    [
        ("--batch-size", "0", "expected a positive integer, got 0"),
        ("--max-seq-length", "-5", "expected a positive integer, got -5"),
        ("--max-seq-length", "0", "expected a positive integer, got 0"),
        ("--max-seq-length", "many", "expected a positive integer, got 'many'"),
        ("--device", "tpu", "unknown device 'tpu'"),
    ],
)
def test_bad_model_options_are_refused_at_the_command_line(tiny_st_model, capsys, option, value, expected):
    one_line_error(capsys, ["similarity", "--model", str(tiny_st_model), option, value, "a", "b"], expected)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_device_without_cuda_is_one_line(tiny_st_model, capsys):
    one_line_error(
        capsys,
        ["encode", "--model", str(tiny_st_model), "--device", "cuda", "--input", "x.txt", "--output", "x.npy"],
        "this torch has no CUDA device",
    )


def write_config(tmp_path, train_file, data_dir, **data):
    import yaml

    tree = {
        "method": "simcse-unsup",
        "model": {"name": str(data.pop("model")), "pooler": "mean"},
        "data": {"train": str(train_file), **data},
        "train": {"output_dir": str(tmp_path / "run"), "max_steps": 1, "progress_bar": False},
        "eval": {"dev_task": "none"},
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(tree), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "name, text, data, expected",
    [
        ("t.jsonl", '{"text": "a man plays"}\n{"text": broken\n', {}, "a .jsonl file needs data.columns"),
        (
            "t.csv",
            'text\na man plays\n"a dog runs\nthe cat sits\n',
            {"columns": ["text"]},
            "t.csv:3: malformed CSV row",
        ),
        (
            "t.csv",
            'text\n"a dog runs\nthe cat sits\n"\na man plays\n',
            {"columns": ["text"]},
            "t.csv:2: a field runs over lines 2-4 (unterminated quote?)",
        ),
    ],
)
def test_silently_misread_training_files_stop_with_the_file_and_line(
    tiny_backbone, tmp_path, capsys, name, text, data, expected
):
    train_file = tmp_path / name
    train_file.write_text(text, encoding="utf-8")
    config = write_config(tmp_path, train_file, None, model=tiny_backbone, **data)
    one_line_error(capsys, ["train", str(config), "--quiet"], expected)
    assert not (tmp_path / "run").exists()  # a failed run leaves no folder holding only config.yaml


def test_eval_all_with_no_data_is_an_error_not_an_empty_results_file(tiny_st_model, tmp_path, capsys):
    out = tmp_path / "results.json"
    (tmp_path / "empty").mkdir()
    one_line_error(
        capsys,
        [
            "eval",
            "--model",
            str(tiny_st_model),
            "--tasks",
            "all",
            "--data-dir",
            str(tmp_path / "empty"),
            "--output",
            str(out),
            "--quiet",
        ],
        "no task has data",
    )
    assert not out.exists()


def test_index_build_does_not_overwrite_silently(tiny_st_model, corpus_file, tmp_path, capsys):
    argv = [
        "index",
        "build",
        "--model",
        str(tiny_st_model),
        "--corpus",
        str(corpus_file),
        "--output",
        str(tmp_path / "idx"),
        "--quiet",
        "--limit",
        "10",
    ]
    assert main(argv) == 0
    capsys.readouterr()
    one_line_error(capsys, argv, "already exists and is not empty; pass --overwrite")
    assert main([*argv, "--overwrite"]) == 0


def test_version_and_help_texts(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.startswith("sentlab ")
    for argv, wanted in [
        (["--help"], ["sentlab: learn sentence embeddings"]),
        (["train", "--help"], ["CONFIG", "a YAML config file", "--data-dir", "--quiet"]),
        (["encode", "--help"], ["one sentence a line", ".npy file to write", "sentences encoded"]),
        (["index", "pack", "--help"], ["corpus index", "Eq. 7 weight", "RankEncoder folder"]),
    ]:
        with pytest.raises(SystemExit):
            main(argv)
        text = capsys.readouterr().out
        assert "``" not in text
        for phrase in wanted:
            assert phrase in text, (argv, phrase)


def test_eval_of_a_rank_index_is_labelled_eq7_or_rank_vectors(tiny_st_model, corpus_file, tmp_path, capsys):
    from tests.fake_data import write_evalrank

    write_evalrank(tmp_path / "data")
    assert (
        main(
            [
                "index",
                "build",
                "--model",
                str(tiny_st_model),
                "--corpus",
                str(corpus_file),
                "--output",
                str(tmp_path / "idx"),
                "--quiet",
            ]
        )
        == 0
    )
    for lam, label in [("1", "(rank vectors, Eq. 2)"), ("0.1", "(Eq. 7, lambda_inf=0.1)")]:
        out = tmp_path / f"r{lam}.json"
        assert (
            main(
                [
                    "eval",
                    "--model",
                    str(tiny_st_model),
                    "--index",
                    str(tmp_path / "idx"),
                    "--lambda-inf",
                    lam,
                    "--tasks",
                    "evalrank",
                    "--data-dir",
                    str(tmp_path / "data"),
                    "--output",
                    str(out),
                    "--quiet",
                ]
            )
            == 0
        )
        assert json.loads(out.read_text())["model"].endswith(label)


def test_quiet_training_prints_no_log_records_or_progress_lines(tiny_backbone, corpus_file, tmp_path, capsys):
    config = write_config(tmp_path, corpus_file, None, model=tiny_backbone)
    assert main(["train", str(config), "--quiet", "--no-eval", "--set", "train.logging_steps=1"]) == 0
    out, err = capsys.readouterr()
    assert "'loss'" not in out + err and "model saved" not in err, (out, err)
    assert main(["train", str(config), "--no-eval", "--set", f"train.output_dir={tmp_path / 'loud'}"]) == 0
    assert "model saved" in capsys.readouterr().err  # the same run without --quiet does report


def test_output_into_a_closed_pipe_ends_without_a_traceback():
    """`sentlab presets | head -1`: once the reader is gone, the command ends quietly (exit 141, as
    a shell reports SIGPIPE), with no Python traceback on stderr."""
    import subprocess
    import sys

    code = "import sys\nfrom sentlab.cli import main\nsys.exit(main(['presets', '--all']))"
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # the reader is gone before the first write: every write fails, no race
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141 and "Traceback" not in stderr, stderr
