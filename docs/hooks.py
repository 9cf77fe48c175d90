"""Reference pages generated from the code and committed, so they read the same in a repository
browser, an editor and the site, and cannot drift from the code.

Between ``<!-- sentlab:NAME begin ... -->`` and ``<!-- sentlab:NAME end -->`` a page holds generated
text: ``cli`` the command-line reference, read from each command module's parser
(``sentlab.cli.COMMANDS``); ``presets`` the table of packaged presets (``sentlab.presets.list_presets``);
``data`` the data sets (``sentlab.data.sources``); ``hard_negatives`` the table of the hard-negative
comparison, read from its record.

A measured figure is read from the run that measured it: ``docs/figures.yaml`` names, for each figure,
its record in ``benchmarks/records/`` (``python -m benchmarks run NAME`` keeps a run there with its command,
date, commit and machine), the key of the value in it and the format. A page quotes the figure as
``<!--fig:NAME-->VALUE<!--/fig-->`` (the comment is invisible on the site and in a repository
browser), and the value between the markers is regenerated from the record like any region, so no
page can quote a figure no record holds, nor two pages one figure differently. ``records`` is the
table of the records the figures come from.

    python docs/hooks.py            # rewrite the generated regions and figures of every page (and README.md)
    python docs/hooks.py --check    # exit 1 naming each stale page (tests/test_docs.py runs the same check)

As an mkdocs hook it refuses to build a page whose generated text is stale.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
WIDTH = "100"  # argparse wraps help at the terminal's width: one width wherever it is generated


def _usage(parser: argparse.ArgumentParser, title: str, level: int) -> list[str]:
    lines = [f"{'#' * level} `{title}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                lines += _usage(child, f"{title} {name}", min(level + 1, 4))
    return lines


def cli_reference() -> str:
    from sentlab.cli import build_parser

    parser = build_parser()
    lines = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                lines += _usage(child, f"sentlab {name}", 2)
    return "\n".join(lines)


def presets_table() -> str:
    from sentlab.presets import list_presets

    rows = [
        "| preset | method | start model | hardware | run on a GPU | data | paper |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in list_presets():
        rows.append(
            f"| `{p.name}` | {p.method} | `{p.model}` | {p.hardware} | {'yes' if p.run_on_gpu else 'no'} | "
            f"{', '.join(p.data)} | {p.paper} |"
        )
    return "\n".join(rows)


def data_table() -> str:
    from sentlab.data.sources import SOURCES

    rows = ["| data set | where in the data folder | what | how to get it |", "|---|---|---|---|"]
    for source in SOURCES.values():
        where = ", ".join(f"`{path}`" for path in source.paths)
        rows.append(f"| `{source.name}` | {where} | {source.description} | {source.how_to_get()} |")
    return "\n".join(rows)


def _type(annotation) -> str:
    import typing

    text = getattr(annotation, "__name__", None) if not typing.get_args(annotation) else None
    text = text or str(annotation).replace("typing.", "")
    return re.sub(r"\b(?:[a-z_]+\.)+(?=[A-Z])", "", text).replace("NoneType", "None")


def _default(field) -> str:
    from pydantic import BaseModel
    from pydantic_core import PydanticUndefined

    if field.is_required():
        return "required"
    if field.default_factory is not None:
        value = field.default_factory()
        return "(a section)" if isinstance(value, BaseModel) else f"`{value}`"
    value = field.default
    return "`null`" if value is None else f"`{value}`" if value is not PydanticUndefined else ""


def _fields(model, prefix: str, rows: list[str]) -> None:
    from pydantic import BaseModel

    for name, field in model.model_fields.items():
        annotation = field.annotation
        sub = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
        if sub is None:
            inner = [a for a in getattr(annotation, "__args__", ()) if isinstance(a, type) and issubclass(a, BaseModel)]
            kind = "list of" if str(annotation).startswith("list[") else None
            if inner and kind:  # a list of sections (rse.sources)
                rows.append(
                    f"| `{prefix}{name}` | list of `{inner[0].__name__}` | {_default(field)} | {field.description or ''} |"
                )
                _fields(inner[0], f"{prefix}{name}[].", rows)
                continue
            if inner:  # an optional section (model.random_init)
                sub = inner[0]
        if sub is not None:
            rows.append(
                f"| `{prefix}{name}` | section | {_default(field)} | {(field.description or sub.__doc__ or '').splitlines()[0]} |"
            )
            _fields(sub, f"{prefix}{name}.", rows)
            continue
        description = (field.description or "").replace("|", "\\|")
        kind = _type(annotation).replace("|", "\\|")
        rows.append(f"| `{prefix}{name}` | `{kind}` | {_default(field)} | {description} |")


def config_reference() -> str:
    """Every key of a training config: the sections every method shares, then each method's own,
    read from the pydantic schema (``sentlab.training.config``, each method's config class)."""
    from sentlab.encoders.loading import START_KIND_LACKS
    from sentlab.methods import installed_methods
    from sentlab.training.config import METHOD_REFUSES, TrainConfig

    header = ["| key | type | default | meaning |", "|---|---|---|---|"]
    lines = ["## Every method", ""]
    rows: list[str] = []
    shared = {name: f for name, f in TrainConfig.model_fields.items() if name != "method"}
    for name, field in shared.items():
        rows.append(f"| `{name}` | section | {_default(field)} | |")
        _fields(field.annotation if name != "about" else field.annotation.__args__[0], f"{name}.", rows)
    lines += [*header, *rows, ""]
    lines += [
        "## Every start model",
        "",
        "What a start model of each kind refuses, whatever the method, each in one line "
        "(`sentlab.encoders.loading.START_KIND_LACKS`; a transformer takes every setting):",
        "",
    ]
    for kind, lacks in START_KIND_LACKS.items():
        if lacks:
            named = {"static": "a static model (`StaticEmbedding`)", "adapter": "an adapter folder (a LoRA adapter)"}
            words = {
                "method": "`method` other than supervised",
                "backend": "`--backend` onnx / openvino (encode, eval)",
            }
            refused = "; ".join(f"{words.get(key, f'`{key}`')}: no {why}" for key, why in lacks.items())
            lines += [f"- {named.get(kind, kind)}: {refused}.", ""]
    for method, config in installed_methods().items():
        own = [n for n in config.model_fields if n not in TrainConfig.model_fields]
        overridden = [
            n for n in ("data",) if config.model_fields[n].annotation is not TrainConfig.model_fields[n].annotation
        ]
        lines += [f"## `method: {method}`", ""]
        refused = {**config.not_read, **METHOD_REFUSES.get(method, {})}  # refused when set (TrainConfig.unread)
        if refused:
            idle = "; ".join(f"`{key}` ({instead})" for key, instead in refused.items())
            lines += [f"Does not read, and refuses: {idle}.", ""]
        sometimes = {key: when for key, when in config.idle_when.items() if key not in refused}
        if sometimes:
            idle = "; ".join(f"`{key}` {when}" for key, when in sometimes.items())
            lines += [f"Refuses, under some settings: {idle}.", ""]
        if not own and not overridden:
            lines += ["No section of its own.", ""]
            continue
        rows = []
        for name in [*own, *overridden]:
            field = config.model_fields[name]
            _fields(field.annotation, f"{name}.", rows)
        # a key the method refuses whatever its settings is not one of its keys (RSE's data.train, data.sets)
        never = [
            key
            for key, when in {**refused, **config.idle_when}.items()
            if key in refused or "supervised method" in when
        ]
        never += ["data.sampler"] if "data.sets" in never else []  # it batches data.sets only
        rows = [row for row in rows if not any(row.startswith((f"| `{key}` ", f"| `{key}.")) for key in never)]
        lines += [*header, *rows, ""]
    return "\n".join(lines).rstrip()


SHOWN_PRESET = "simcse-unsup-minilm-cpu"  # the main job's preset, shown whole on the presets page


def preset_yaml() -> str:
    """The YAML file of :data:`SHOWN_PRESET`, as sentlab ships it."""
    from sentlab.presets import packaged_file

    return f"`{SHOWN_PRESET}`:\n\n```yaml\n{packaged_file(SHOWN_PRESET).read_text('utf-8').rstrip()}\n```"


RECORDS = DOCS.parent / "benchmarks" / "records"
FIGURE = re.compile(r"<!--fig:(?P<name>[\w.-]+)-->(?P<value>.*?)<!--/fig-->")


def _records_module():
    """``benchmarks/record.py``, the one reader of records."""
    return _benchmarks("record")


def _benchmarks(name: str):
    """A module of the checkout's ``benchmarks`` package (``record``, ``registry``)."""
    import importlib

    root = str(DOCS.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    return importlib.import_module(f"benchmarks.{name}")


def record(name: str, records: Path = RECORDS) -> dict:
    """The record ``name`` (``benchmarks/record.py``'s reader); one that ran on a changed tree without
    the diff it ran with cannot back a figure."""
    records_module = _records_module()
    try:
        found = records_module.read(name, records)
    except FileNotFoundError:
        raise KeyError(f"no record {name!r} in {records}") from None
    ran = found.get("commit") or {}
    if ran.get("dirty") and "diff" not in ran:
        raise KeyError(f"record {name!r} ran on a changed tree without its diff: run it again on a clean tree")
    return found


SELECT = re.compile(r"(?P<name>[^.\[]+)\[(?P<where>[^\]]+)\]")


def lookup(data, key: str):
    """``data``'s value at the dotted ``key``: ``result.tasks.STS12`` walks objects, a number indexes a
    list, and ``results[lambda_inf=0.1,corpus_size=10000]`` picks the one item of a list whose fields
    have those values (so a re-run that adds or reorders rows cannot move the figure to another row)."""
    for part in re.findall(r"[^.\[]+(?:\[[^\]]*\])?", key):
        selected = SELECT.fullmatch(part)
        try:
            if selected:
                wanted = dict(item.split("=", 1) for item in selected["where"].split(","))
                items = [
                    item
                    for item in data[selected["name"]]
                    if all(_same(item.get(field), value) for field, value in wanted.items())
                ]
                if len(items) != 1:
                    raise KeyError(f"{len(items)} items of {selected['name']!r} match {selected['where']}")
                data = items[0]
            else:
                data = data[int(part)] if isinstance(data, list) else data[part]
        except KeyError as err:
            if selected and err.args and " match " in str(err.args[0]):
                raise
            raise KeyError(f"no {key!r} (stopped at {part!r})") from None
        except (IndexError, ValueError, TypeError, AttributeError):
            raise KeyError(f"no {key!r} (stopped at {part!r})") from None
    return data


def _same(found, wanted: str) -> bool:
    try:
        return float(found) == float(wanted)
    except (TypeError, ValueError):
        return str(found) == wanted


def figures(records: Path = RECORDS) -> dict[str, dict]:
    """``docs/figures.yaml``: name -> what, source, record, key, format, and the value read from the
    record (``format`` applied to the value times ``scale``)."""
    import yaml

    known = yaml.safe_load((DOCS / "figures.yaml").read_text("utf-8"))
    for name, figure in sorted(known.items(), key=lambda item: "derive" in item[1]):  # records first
        try:
            if "derive" in figure:
                value = derived(figure["derive"], {k: f["raw"] for k, f in known.items() if "raw" in f})
                figure["transcribed"] = any(
                    known[name].get("transcribed") for name in NAMED.findall(figure["derive"]) if name in known
                )
            else:
                found = record(figure["record"], records)
                value = lookup(found, figure["key"]) * figure.get("scale", 1)
                figure["transcribed"] = "transcribed" in found
            figure["raw"] = value
            figure["value"] = figure.get("format", "{}").format(value)
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as err:
            raise KeyError(f"figure {name!r}: {err.args[0] if err.args else err}") from None
    return known


NAMED = re.compile(r"\{([\w.-]+)\}")


def derived(expression: str, raw: dict[str, float]) -> float:
    """A figure computed from others (``derive: "1e6 / {encode-backends-torch} / 3600"``): each
    ``{name}`` is that figure's value as read from its record, and the rest is arithmetic (numbers,
    + - * / ** and parentheses), so a per-million time or a ratio moves when its records do."""
    import ast
    import operator

    names: dict[str, str] = {}

    def slot(match: re.Match) -> str:
        if match.group(1) not in raw:
            raise KeyError(f"{match.group(1)!r} is not a figure read from a record")
        return names.setdefault(match.group(1), f"v{len(names)}")

    tree = ast.parse(NAMED.sub(slot, expression), mode="eval")
    values = {var: raw[name] for name, var in names.items()}
    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
    ops[ast.Pow] = operator.pow

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name) and node.id in values:
            return values[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        raise ValueError(f"derive {expression!r}: only numbers, figures and + - * / ** are allowed")

    return value(tree)


def records_table(records: Path = RECORDS) -> str:
    """The records the figures are read from: name, kind, date, machine, and the command
    ``python -m benchmarks run NAME`` runs (the registry's; a GPU part's own)."""
    records_module = _records_module()
    declared = _benchmarks("registry").BENCHMARKS
    rows = ["| record | kind | date | machine | command |", "|---|---|---|---|---|"]
    for r in records_module.all_records(records):
        m = r["machine"]
        cpu = m.get("cpu") or {}
        where = ", ".join(m.get("gpus") or []) or (
            f"{cpu.get('model', '?')}, {cpu.get('cores', '?')} cores ({', '.join(cpu.get('flags', [])) or 'no flags read'})"
        )
        if "transcribed" in r:
            where += "; transcribed, not kept by the runner"
        b = declared.get(r["name"])
        command = (b.command if b else r["command"]).replace("|", "\\|")
        kind = b.kind if b else "gpu"
        rows.append(f"| `{r['name']}` | {kind} | {r['date'][:10]} | {where} | `{command}` |")
    return "\n".join(rows)


NEGATIVES = {"in-batch": "in-batch only", "own-negatives": "the data's own", "mined": "mined (sentlab mine)"}


def hard_negatives_table(records: Path = RECORDS) -> str:
    """The hard-negative comparison (record ``hard-negatives-minilm``): each training set and kind of
    negative, its pairs (those sharing no text with a scored set) and the rows trained (those the
    mining gave a negative), its mean and sd over seeds on each task, and its margin over in-batch
    negatives only."""
    result = record("hard-negatives-minilm", records)["result"]
    tasks = {"sts_avg": "STS avg", "qqp-duplicates": "QQP retrieval MAP@100"}
    head = "| trained on | negatives | pairs | rows | " + " | ".join(
        f"{t} | minus in-batch [95 %]" for t in tasks.values()
    )
    rows = [head + " |", "|---|---|---:|---:|" + "---:|---|" * len(tasks)]
    start = result["start"]
    cells = [f"{start['sts_avg']:.2f}", f"{start['qqp-duplicates']['map@100']:.2f}"]
    rows.append("| (start model) | | | |" + "".join(f" {c} | |" for c in cells))
    for name, dataset in result["datasets"].items():
        compare = dataset["compare"]
        for label, kind in NEGATIVES.items():
            if label not in compare["scores"]:
                continue
            line = f"| {name} | {kind} | {dataset['pairs']:,} | {dataset['rows_trained']:,} |"
            for task in tasks:
                score = compare["scores"][label][task]
                line += f" {score['mean']:.2f} (sd {score['sd']:.2f}) |"
                d = compare["minus_baseline"].get(label, {}).get(task)
                line += f" {d['difference']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}] |" if d else " |"
            rows.append(line)
    return "\n".join(rows)


def storage_table(records: Path = RECORDS) -> str:
    """all-MiniLM-L6-v2 as it ships at each dimension and storage precision (record ``storage-minilm``):
    STS average, EvalRank MRR, bytes a sentence, and the search time a query over what is stored
    (record ``storage-search-minilm``)."""
    result = record("storage-minilm", records)["result"]
    model = result["models"]["minilm"]
    timed = record("storage-search-minilm", records)
    search = timed["result"]["models"]["minilm"]["search"]
    searched = timed["machine"]["cpu"]["model"].split(" (")[0]  # another machine than the scores' may time it
    rows = [
        f"| dimensions | precision | bytes a sentence | STS avg | EvalRank MRR | search, ms a query ({search.get('corpus', 0):,} sentences; {searched}) |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for name, row in model["settings"].items():
        if name.startswith("pca_"):
            continue
        dims, precision = name.split("_")
        ms = search.get("ms_a_query", {}).get(dims, {}).get(precision)
        rows.append(
            f"| {dims} | {precision} | {row['bytes']:,} | {row['sts_avg']:.2f} | {row['evalrank_mrr']:.2f} | "
            + (f"{ms:.3f} |" if ms is not None else "|")
        )
    return "\n".join(rows)


def matryoshka_table(records: Path = RECORDS) -> str:
    """At each dimension (float32): the CPU preset trained plain and with Matryoshka (mean and sd over
    seeds), and PCA of the shipped model to that dimension (record ``storage-minilm``)."""
    result = record("storage-minilm", records)["result"]
    seeds = len([m for m in result["models"] if "plain-" in m])
    shipped = result["models"]["minilm"]["settings"]
    rows = [
        f"| dimensions | task | as shipped, truncated | PCA of it | trained plain ({seeds} seeds) | trained with Matryoshka ({seeds} seeds) |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for name in shipped:
        if not name.endswith("_float32"):
            continue
        dims = name.split("_")[0]
        for task, label in (("sts_avg", "STS avg"), ("evalrank_mrr", "EvalRank MRR")):
            pca = shipped.get(f"pca_{dims}", {}).get(task)
            cells = [f"{shipped[name][task]:.2f}", f"{pca:.2f}" if pca is not None else "(the whole)"]
            for kind in ("plain", "matryoshka"):
                score = result["trained"][kind][name][task]
                cells.append(f"{score['mean']:.2f} (sd {score['sd']:.2f})")
            rows.append(f"| {dims} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def adapters_table(records: Path = RECORDS) -> str:
    """Full fine-tuning against a LoRA adapter on the CPU preset (record ``adapters-minilm``)."""
    summary = record("adapters-minilm", records)["result"]["summary"]

    def cell(kind: str, key: str, form: str) -> str:
        value = summary[kind][key]
        return form.format(value["mean"]) + (f" ({form.format(value['sd'])})" if value["sd"] else "")

    rows = ["| | parameters trained | step (s) | peak memory (MiB) | STS avg |", "|---|---:|---:|---:|---:|"]
    for kind, label in (("full", "full fine-tuning"), ("lora", "LoRA adapter")):
        rows.append(
            f"| {label} | {cell(kind, 'trained_parameters', '{:,.0f}')} | {cell(kind, 'step_s', '{:.3f}')} | "
            f"{cell(kind, 'peak_rss_mib', '{:,.0f}')} | {cell(kind, 'sts_avg', '{:.2f}')} |"
        )
    gap = summary["lora_minus_full_sts"]
    rows.append(f"| adapter minus full, STS avg | | | | {gap['mean']:+.2f} (sd {gap['sd']:.2f}) |")
    return "\n".join(rows)


def retrieval_table(records: Path = RECORDS) -> str:
    """The retrieval job on CQADupStack titles (record ``retrieval-minilm-cqadupstack``): nDCG@10 of the
    start model and of each config over seeds on the dev and test forums, each config minus the start
    model with its 95 % interval over seeds and queries, the steps kept, and which row dev chose."""
    result = record("retrieval-minilm-cqadupstack", records)["result"]
    scores, chosen = result["scores"], result["chosen_on_dev"]
    rows = [
        "| | dev nDCG@10 | test nDCG@10 | test minus start [95 %] | steps kept (0: start) |",
        "|---|---:|---:|---|---|",
    ]
    start = scores["start model"]
    mark = lambda name: f"**{name}** (chosen on dev)" if name == chosen else name  # noqa: E731
    rows.append(f"| {mark('start model')} | {start['dev']['ndcg_at_10']:.2f} | {start['test']['ndcg_at_10']:.2f} | | |")
    for name, row in scores.items():
        if name == "start model":
            continue
        dev, test = row["dev"]["ndcg_at_10"], row["test"]["ndcg_at_10"]
        d = row["test"]["minus_start"]
        seeds = lambda s: ", ".join(f"{x:.2f}" for x in s["per_seed"])  # noqa: E731
        rows.append(
            f"| {mark(name)} | {dev['mean']:.2f} ({seeds(dev)}) | {test['mean']:.2f} ({seeds(test)}) | "
            f"{d['difference']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}] | "
            + ", ".join(str(k) for k in result["kept_steps"][name])
            + " |"
        )
    data, settings = result["data"], result["settings"]
    rows += [
        "",
        f"{data['training_pairs']:,} pairs of {' and '.join(data['train_forums'])}, {data['triplets']:,} with a "
        f"mined negative (from {data['mined_from_titles']:,} of their titles); dev: {data['dev']['forum']}, "
        f"{data['dev']['queries']:,} queries over {data['dev']['passages']:,} passages; test: "
        f"{data['test']['forum']}, {data['test']['queries']:,} queries over {data['test']['passages']:,} passages; "
        f"seeds {settings['seeds']}, one epoch at learning rate {settings['learning_rate']:g}. A config's cells: "
        "the mean over seeds (each seed).",
    ]
    return "\n".join(rows)


def retrieval_expect(records: Path = RECORDS) -> str:
    """The retrieval page's what-to-expect lines (record ``retrieval-minilm-cqadupstack``), indented
    into its note: what dev chose, and the test forum's verdict against the start model."""
    result = record("retrieval-minilm-cqadupstack", records)["result"]
    chosen, scores = result["chosen_on_dev"], result["scores"]
    if chosen == "start model":
        best = max((n for n in scores if n != "start model"), key=lambda n: scores[n]["dev"]["ndcg_at_10"]["mean"])
        d = scores[best]["test"]["minus_start"]
        verdict = (
            f"No config beat the start model on the dev forum, so the start model is kept; the best config on "
            f"dev, {best}, scored {d['difference']:+.2f} nDCG@10 points against it on the test forum "
            f"[{d['low']:+.2f}, {d['high']:+.2f}]."
        )
    else:
        d = scores[chosen]["test"]["minus_start"]
        beyond = "beyond the noise" if d["beyond_noise"] else "not beyond the noise: keep the start model"
        tied = [n for n, v in result["dev_means"].items() if n != chosen and v == result["dev_means"][chosen]]
        verdict = (
            (
                f"{chosen} and {', '.join(tied)} tie on the dev forum at two decimals, and the study took {chosen}"
                if tied
                else f"The dev forum chose {chosen}"
            )
            + f"; on the test forum it scored {d['difference']:+.2f} nDCG@10 points "
            f"against the start model (95 % interval over seeds and queries [{d['low']:+.2f}, "
            f"{d['high']:+.2f}], {beyond})."
        )
    lines = [
        "**Measured** on CQADupStack titles (record `retrieval-minilm-cqadupstack`, the table in step 5): "
        "all-MiniLM-L6-v2 fine-tuned on the duplicate links of two forums, chosen on a third forum and "
        f"confirmed on a fourth, {len(result['settings']['seeds'].split(','))} seeds each. " + verdict,
        "On your data the answer can differ; the steps below measure it.",
    ]
    return "\n".join("    " + line for line in lines)


def retrieval_verdict(records: Path = RECORDS) -> str:
    """What the retrieval table says, from its record: whether any config beat the start model beyond
    the noise on the test forum, and which steps the runs kept."""
    result = record("retrieval-minilm-cqadupstack", records)["result"]
    configs = {n: s for n, s in result["scores"].items() if n != "start model"}
    beyond = [n for n, s in configs.items() if s["test"]["minus_start"]["beyond_noise"]]
    if beyond:
        said = f"{', '.join(beyond)} beat the start model on the test forum beyond the noise."
    else:
        said = "No config beat the start model on the test forum beyond the noise: the start model is the one to ship."
    return (
        f"{said} "
        "all-MiniLM-L6-v2 was trained on StackExchange's duplicate questions among its data (its model card's "
        "list), so CQADupStack is near home for it; a start model far from your data has more to gain, and the "
        "same commands say how much."
    )


NOT_MEASURED = "Not measured yet: no record `{name}` (`python -m benchmarks run {name}` writes it)."


def static_potion(records: Path = RECORDS) -> str:
    """sentlab's static students against potion-base-8M (records ``static-potion-minilm`` and
    ``static-potion-mpnet``): for each teacher, potion-base-8M, all-MiniLM-L6-v2, the teacher and each
    student on the STS average, STS-B and the domain card, with its rate as a multiple of
    all-MiniLM-L6-v2's torch fp32 rate; a student's difference to potion-base-8M with its 95 % interval;
    each target, met or missed."""
    parts = []
    for name in ("static-potion-minilm", "static-potion-mpnet"):
        if not (records / f"{name}.json").is_file():
            parts.append(NOT_MEASURED.format(name=name))
            continue
        result = record(name, records)["result"]
        scores, speed, minus = result["scores"], result["speed"], result["minus_potion"]
        keys = ("sts_avg", "sts_b", "domain_ndcg_at_10")
        teacher = result["teacher"].split("/")[-1]
        rows = [
            f"Teacher {teacher} (record `{name}`):",
            "",
            "| model | STS avg | STS-B test | domain nDCG@10 | × all-MiniLM-L6-v2 fp32 rate | minus potion-base-8M: STS avg, STS-B, domain [95 %] |",
            "|---|---:|---:|---:|---:|---|",
        ]

        def times(row: str) -> str:  # the rate over all-MiniLM-L6-v2's, three figures (0.14, 80.6, 119)
            minilm = speed["all-MiniLM-L6-v2 torch fp32"]["sentences_per_second"]
            return f"{speed[row]['sentences_per_second'] / minilm:.3g}"

        rate = {
            "potion-base-8M": "potion-base-8M",
            "all-MiniLM-L6-v2": "all-MiniLM-L6-v2 torch fp32",
            "teacher": "teacher torch fp32",
        }
        for label in ("potion-base-8M", "all-MiniLM-L6-v2", "teacher"):
            if label in scores:
                cells = " | ".join(f"{scores[label][k]:.2f}" for k in keys)
                rows.append(f"| {teacher if label == 'teacher' else label} | {cells} | {times(rate[label])}× | |")
        for label in ("distilled", "trained"):
            cells = " | ".join(f"{scores[label][k]['mean']:.2f}" for k in keys)
            diff = ", ".join(
                f"{minus[label][k]['difference']:+.2f} [{minus[label][k]['low']:+.2f}, {minus[label][k]['high']:+.2f}]"
                for k in keys
            )
            rows.append(f"| student: {label} | {cells} | {times(label)}× | {diff} |")
        t, data, labels = result["targets"], result["data"], result["labels"]
        said = lambda ok: "met" if ok else "missed"  # noqa: E731
        fraction = scores["trained"]
        check = result["label_check"]
        checked = "; ".join(
            f"{setting} {c['cosine_to_fp32']['wikipedia']['mean']:.4f} / {c['cosine_to_fp32']['titles']['mean']:.4f}, "
            f"{c['sentences_per_second']}/s"
            for setting, c in check["settings"].items()
        )
        cpu = record(name, records)["machine"]["cpu"]
        rows += [
            "",
            f"Students: {data['student_tokens']:,} tokens × {data['student_dims']} dimensions; 'distilled' is "
            f"model2vec's distillation alone (one run, nothing drawn), 'trained' the mean of seeds "
            f"{', '.join(map(str, result['seeds']))}, trained on {data['wikipedia_sentences']:,} Wikipedia "
            f"sentences and the {data['domain_titles']:,} titles of the {data['test_forum']} collection (the "
            f"collection the domain card searches, unlabelled). Scores ×100 (STS: "
            f"Spearman; domain: nDCG@10); intervals: 95 % over seeds and items. Rates: sentences a second on "
            f"{data['rate_sentences']:,} held-out Wikipedia sentences, the best of three rounds that take every row "
            f"in turn on a {cpu['cores']}-core {cpu['model'].split(' (')[0]} CPU (all-MiniLM-L6-v2: "
            f"{speed['all-MiniLM-L6-v2 torch fp32']['sentences_per_second']}/s at batch 128, the static models at "
            f"batch 4,096): compare them within this table, whose rows were timed together. The labels: "
            f"{labels['backend']} {labels['precision']} ({check.get('why', '')}; mean cosine to torch fp32 on "
            f"Wikipedia / titles and rate: {checked}; torch fp32 {check['torch_fp32_sentences_per_second']}/s), "
            f"{labels['texts_encoded']:,} texts"
            + (f" in {labels['teacher_seconds']:,.0f} s" if labels.get("teacher_seconds") else "")
            + (
                "; the later seeds read them from the cache"
                if all(labels.get("later_seeds_from_cache") or [False])
                else "; the later seeds encoded them again"
            )
            + ". Targets for 'trained': potion-base-8M's STS "
            f"average or above {said(t['sts_avg_at_least_potion'])}, its STS-B or above "
            f"{said(t['sts_b_at_least_potion'])}, beyond it on the domain card {said(t['domain_beyond_potion'])}, "
            f"100× all-MiniLM-L6-v2's torch fp32 rate {said(t['speed_100x_minilm'])}; 95 % of all-MiniLM-L6-v2: "
            + ", ".join(
                # of all-MiniLM-L6-v2 (its older records name it fraction_of_teacher)
                f"{k.replace('_', ' ')} {fraction[k].get('fraction_of_minilm', fraction[k].get('fraction_of_teacher')):.1%} ({said(ok)})"
                for k, ok in t["fraction_of_minilm_095"].items()
            )
            + ".",
        ]
        parts.append("\n".join(rows))
    return "\n\n".join(parts)


def mpnet_paths(records: Path = RECORDS) -> str:
    """Each path on all-mpnet-base-v2 (record ``mpnet-paths``): its status, seconds and what it read back
    (a trained model's width, type and reload difference; LoRA's targets; Matryoshka's dimensions; each
    encode setting's cosine to torch fp32; the static student's size; the mined triplets; the card's
    nDCG@10)."""
    name = "mpnet-paths"
    if not (records / f"{name}.json").is_file():
        return NOT_MEASURED.format(name=name)
    found = record(name, records)
    result, cpu = found["result"], found["machine"]["cpu"]

    def read_back(path: str, row: dict) -> str:
        if row["status"] != "ok":
            return "failed: " + " ".join(row["error"].split()).replace("|", "\\|")  # one cell of the table
        said = []
        if "dims" in row and "model_type" in row:
            losses = row.get("losses") or []
            said.append(
                f"{row['model_type'] or ('an adapter folder' if 'target_modules' in row else 'no config.json')}, "
                f"{row['dims']} dimensions, reloaded to "
                f"{row['reload_max_abs_difference']:.1g}"
                + (f"; loss {losses[0]:.3f} → {losses[-1]:.3f}" if losses else "")
            )
        if "target_modules" in row:
            said.append("LoRA targets " + ", ".join(f"`{m}`" for m in row["target_modules"]))
        if "trained_dims" in row:
            said.append("trained dimensions " + ", ".join(map(str, row["trained_dims"])))
        if "settings" in row:
            said += [
                f"{k}: ran {v['ran']}, cosine to torch fp32 {v['cosine_mean']:.4f} (lowest {v['cosine_min']:.4f})"
                for k, v in row["settings"].items()
                if k != "torch fp32"
            ]
        if path == "distill-static":
            said.append(f"{row['tokens']:,} tokens × {row['dims']} dimensions")
        if "triplets" in row:
            said.append(
                f"{row['triplets']} triplets, {row['negative_is_anchor_or_positive']} negatives equal to their pair"
            )
        if "ndcg_at_10" in row:
            said.append(f"nDCG@10 {row['ndcg_at_10']:.2f} on the {row['card']} card")
        return "; ".join(said)

    rows = [
        f"Each path on all-mpnet-base-v2 for {result['steps']} steps of {result['batch_size']} (record `{name}`, a "
        f"{cpu['cores']}-core {cpu['model'].split(' (')[0]} CPU):",
        "",
        "| path | status | seconds | read back |",
        "|---|---|---:|---|",
    ]
    rows += [
        f"| {path} | {row['status']} | {row['seconds']:.0f} | {read_back(path, row)} |"
        for path, row in result["paths"].items()
    ]
    return "\n".join(rows)


ROUTE_NAMES = {  # the record's configs, as the distillation page names them
    "mse-distill": "regression (a)",
    "mse-fitted": "regression (a) with a fitted projection",
    "rankcse": "listwise route (b, RankCSE)",
    "margin-mse": "margin route (c, MarginMSE)",
    "simcse": "SimCSE (no teacher)",
}


def distill_table(records: Path = RECORDS) -> str:
    """all-mpnet-base-v2 into all-MiniLM-L6-v2 by each route (record ``distill-mpnet-minilm``): the
    start model, each config over seeds and the teacher on the STS average, STS-B test and nDCG@10 of
    the dev and test forums; each config minus the start model on the test forum and the STS average with
    its 95 % interval over seeds and items; what the teacher's labels cost."""
    if not (records / "distill-mpnet-minilm.json").is_file():
        return NOT_MEASURED.format(name="distill-mpnet-minilm")
    result = record("distill-mpnet-minilm", records)["result"]
    scores, chosen, seconds = result["scores"], result["chosen_on_dev"], result.get("seconds")
    keys = ("sts_avg", "stsb_test", "dev", "test")
    rows = [
        "| | STS avg | STS-B test | dev nDCG@10 | test nDCG@10 | test minus start [95 %] | STS avg minus start [95 %] |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    mark = lambda name: f"**{name}** (chosen on dev)" if name == chosen else name  # noqa: E731
    start = scores["start model"]
    rows.append(f"| {mark('start model')} | " + " | ".join(f"{start[k]:.2f}" for k in keys) + " | | |")
    test_task = next(t for t in next(iter(result["minus_start"].values())) if t.endswith("-test"))
    for name in [*result.get("routes", {"mse-distill": "a"}), "simcse"]:
        row, minus = scores[name], result["minus_start"][name]
        interval = lambda d: f"{d['difference']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}]"  # noqa: E731
        cells = " | ".join(f"{row[k]['mean']:.2f}" for k in keys)
        label = f"{ROUTE_NAMES.get(name, name)}: `{name}`"
        label = f"**{label}** (chosen on dev)" if name == chosen else label
        rows.append(f"| {label} | {cells} | {interval(minus[test_task])} | {interval(minus['sts_avg'])} |")
    teacher = result["teacher_scores"]
    rows.append("| teacher (all-mpnet-base-v2) | " + " | ".join(f"{teacher[k]:.2f}" for k in keys) + " | | |")
    data, settings, labels = result["data"], result["settings"], result["teacher_labels"]
    if "first_run" in labels:  # a record of route (a) alone
        labels = {"mse-distill": labels}
    reread = all(all(kept["later_runs_from_cache"]) for kept in labels.values())
    timed, check = result.get("label_cost"), result.get("label_check")
    if timed:  # timed apart, from an empty cache
        cost = (
            f"the teacher in {timed['setting']} on the {timed['device']} encoded route (a)'s and (b)'s "
            f"{timed['a_b']['texts']:,} texts in {timed['a_b']['seconds']:.0f} s and route (c)'s "
            f"{timed['c']['texts']:,} in {timed['c']['seconds']:.0f} s from an empty cache"
        )
    else:
        cost = "; ".join(
            f"{ROUTE_NAMES.get(name, name)}: {kept['first_run']['texts_encoded']:,} texts encoded in "
            f"{kept['first_run']['seconds']:.0f} s"
            for name, kept in labels.items()
        )
    cost += (
        "; later seeds of (a) and (c) read their labels from the embedding cache"
        if reread
        else "; a later seed of (a) or (c) encoded its labels again"
    )
    if "rankcse" in result.get("routes", {}):
        cost += "; RankCSE keeps its teacher's vectors in its run folder, so each seed encodes them"
    if check:
        cost += (
            ". Each CPU setting against torch fp32 on the training text (mean cosine on Wikipedia sentences / titles, sentences a second): "
            + ", ".join(
                f"{name} {v['cosine_to_fp32']['wikipedia']['mean']:.4f} / {v['cosine_to_fp32']['titles']['mean']:.4f}, "
                f"{v['sentences_per_second']:g}/s"
                for name, v in check["settings"].items()
            )
            + (
                f"; torch fp32 {check['torch_fp32_sentences_per_second']:g}/s (batch 128). The runs were labelled in "
                f"{check['chosen']} ({check['why']})"
            )
        )
    rows += [
        "",
        f"{data['texts']:,} unlabelled texts ({data['wikipedia_sentences']:,} Wikipedia sentences, "
        f"{data['domain_titles']:,} titles of the training forums)"
        + (
            f"; route (c): {data['triplets']:,} (title, duplicate, negative) rows from {data['training_pairs']:,} "
            f"duplicate links, the negatives mined by the start model from {data['mined_from_titles']:,} titles"
            if "triplets" in data
            else ""
        )
        + f". Dev: {data['dev_forum']}, test: {data['test_forum']}; seeds {settings['seeds']}, one epoch "
        f"({-(-data['texts'] // settings['batch_size'])} steps of {settings['batch_size']}), length "
        f"{settings['max_seq_length']}"
        + (
            f"; learning rate {settings['learning_rate']:g} for the regression, "
            f"{settings['simcse_learning_rate']:g} for the others"
            if "learning_rate" in settings and "simcse_learning_rate" in settings
            else ""
        )
        + (f", route (c) in batches of {settings['margin_batch_size']}" if "margin_batch_size" in settings else "")
        + ". STS avg: the mean Spearman correlation (×100) over the seven STS tasks; nDCG@10 ×100; a config's "
        "cells: the mean over seeds; intervals: 95 % over seeds and items, in points"
        + (
            (
                f"; the record's run took {seconds / 60:.0f} min, reusing runs that earlier commits made (its "
                "`produced_by` names each)"
                if len(result.get("produced_by") or {}) > 1
                else f"; the whole study took {seconds / 3600:.1f} h on the record's machine"
            )
            if seconds
            else ""
        )
        + f". The teacher's labels, on the record's machine: {cost}.",
    ]
    return "\n".join(rows)


def distill_expect(records: Path = RECORDS) -> str:
    """The distillation page's what-to-expect lines, indented into its note: how many routes beat the start
    model on both headlines (record ``distill-mpnet-minilm``) and what dev chose; whether the static
    students against potion-base-8M are measured yet."""
    lines = []
    if (records / "distill-mpnet-minilm.json").is_file():
        found = record("distill-mpnet-minilm", records)
        result, cpu = found["result"], found["machine"]["cpu"]
        routes = result.get("routes", {"mse-distill": "a"})
        beat = [
            name
            for name in routes
            if all(
                d["beyond_noise"] and d["difference"] > 0
                for task, d in result["minus_start"][name].items()
                if task == "sts_avg" or task.endswith("-test")
            )
        ]
        chosen = result["chosen_on_dev"]
        said = "the start model" if chosen == "start model" else "the " + ROUTE_NAMES.get(chosen, chosen)
        lines.append(
            f"**Measured** (record `distill-mpnet-minilm`, a {cpu['cores']}-core {cpu['model'].split(' (')[0]} CPU): "
            f"{len(beat)} of the {len(routes)} teacher-labelled configs from all-mpnet-base-v2 into all-MiniLM-L6-v2 beat the start "
            f"model beyond the noise on both the STS average and the test forum"
            + (f" ({', '.join(ROUTE_NAMES.get(n, n) for n in beat)})" if beat else "")
            + f"; the dev forum chose {said}. Each route's verdict is under the table."
        )
    else:
        lines.append("**" + NOT_MEASURED.format(name="distill-mpnet-minilm").replace(":", "**:", 1))
    names = {"sts_avg_at_least_potion": "STS average", "sts_b_at_least_potion": "STS-B"}
    names |= {"domain_beyond_potion": "domain card", "speed_100x_minilm": "100× all-MiniLM-L6-v2's rate"}
    for name in ("static-potion-minilm", "static-potion-mpnet"):
        if (records / f"{name}.json").is_file():
            result = record(name, records)["result"]
            targets = {said: result["targets"][key] for key, said in names.items()}
            met, missed = [t for t, ok in targets.items() if ok], [t for t, ok in targets.items() if not ok]
            lines += [
                "",
                f"**Measured** (record `{name}`): the trained static student of {result['teacher'].split('/')[-1]} "
                f"meets {len(met)} of the {len(targets)} targets against potion-base-8M"
                + (f" (met: {', '.join(met)}" if met else " (")
                + ("; " if met and missed else "")
                + (f"missed: {', '.join(missed)})" if missed else ")")
                + f"; it trained on the unlabelled titles of the {result['data']['test_forum']} collection the domain "
                "card searches.",
            ]
    missing = [n for n in ("static-potion-minilm", "static-potion-mpnet") if not (records / f"{n}.json").is_file()]
    if missing:
        lines += [
            "",
            "**Not measured yet**: static students against potion-base-8M ("
            + ", ".join(f"record `{n}`" for n in missing)
            + ").",
        ]
    return "\n".join("    " + line if line else "" for line in lines)


def distill_verdict(records: Path = RECORDS) -> str:
    """What the distillation table says, from its record: for each route whether it beat its start beyond
    the noise on both the STS average and the test forum, the share of the gap to the teacher it closed,
    and its difference to SimCSE; what dev chose; sentence-transformers' trainer beside sentlab's."""
    if not (records / "distill-mpnet-minilm.json").is_file():
        return ""
    result = record("distill-mpnet-minilm", records)["result"]
    said = []
    for name in result.get("routes", {"mse-distill": "a"}):
        minus, gap, against = result["minus_start"][name], result["gap_closed"][name], result["minus_simcse"][name]
        test_task = next(t for t in minus if t.endswith("-test"))
        # beyond the noise is two-sided (the interval excludes 0): a gain is that, above 0
        both = all(minus[t]["beyond_noise"] and minus[t]["difference"] > 0 for t in ("sts_avg", test_task))
        half = all(gap[k] is not None and gap[k] >= 0.5 for k in ("sts_avg", "test"))
        share = lambda k: "no share (the teacher scores no higher)" if gap[k] is None else f"{gap[k]:.0%}"  # noqa: E731
        ahead = against["sts_avg"]["beyond_noise"]
        versus = (
            ("beyond the noise" if against["sts_avg"]["difference"] > 0 else "SimCSE ahead beyond the noise")
            if ahead
            else "within the noise"
        )
        route = ROUTE_NAMES.get(name, name)
        kept = result.get("kept_steps", {}).get(name)
        best = [b for b in result.get("best_trained_dev", {}).get(name) or [] if b is not None]
        if kept and all(step in (0, None) for step in kept):
            kept_said = " Every seed kept step 0, the start model: no checkpoint scored higher on the dev forum" + (
                f" (the best trained one, by seed: {', '.join(f'{b:.2f}' for b in best)}; the start: "
                f"{result['scores']['start model']['dev']:.2f})."
                if best
                else "."
            )
        elif kept:
            kept_said = (
                " Kept steps by seed: " + ", ".join("0 (the start)" if s in (0, None) else str(s) for s in kept) + "."
            )
        else:
            kept_said = ""
        said.append(
            f"The {route} {'beat' if both else 'did not beat'} its start beyond the noise on both the STS average "
            f"and the test forum ({minus['sts_avg']['difference']:+.2f} and {minus[test_task]['difference']:+.2f} "
            f"points) and closed {share('sts_avg')} of the gap to its teacher on the STS average and "
            f"{share('test')} on the test forum: the target (both beyond the noise, half the gap) is "
            f"{'met' if both and half else 'missed'}. Against SimCSE on the same start: "
            f"{against['sts_avg']['difference']:+.2f} on the STS average ({versus}), "
            f"{against[test_task]['difference']:+.2f} on the test forum.{kept_said}"
        )
    chosen = result["chosen_on_dev"]
    said.append(
        f"The dev forum chose {'the start model' if chosen == 'start model' else 'the ' + ROUTE_NAMES.get(chosen, chosen)}."
    )
    parity_run = (records / "distill-mse-parity.json").is_file()
    if result.get("settings", {}).get("model_pooler", "mean") is not None:  # named before the key was kept
        said.append(
            "Its configs name `model.pooler: mean`, which trains the student without its `Normalize` module "
            "(the regression and the margins then read unnormalised embeddings)"
            + ("; the parity run below shows what that changes." if parity_run else ".")
        )
        old = result.get("sentence_transformers_parity")
        if old and not parity_run:  # the study's own parity, of its pooler-named config
            said.append(
                f"Without dev selection (seed {old['seed']}), its regression ends at {old['sentlab']:.2f} test "
                f"nDCG@10 (start {result['scores']['start model']['test']:.2f}); sentence-transformers' own "
                f"trainer, which keeps the student's `Normalize`, at {old['sentence_transformers_trainer']:.2f}."
            )
    if parity_run:
        found = record("distill-mse-parity", records)["result"]
        rows = found["rows"]
        said.append(
            f"The regression through sentence-transformers' own trainer, seed {found['seed']} without dev selection "
            f"(record `distill-mse-parity`), scores {rows['sentence_transformers_trainer']['test']:.2f} nDCG@10 on "
            f"the test forum; sentlab's run of the same config {rows['sentlab']['test']:.2f} "
            f"({found['difference']:+.2f}); with `model.pooler: mean` named, which leaves the student's "
            f"`Normalize` out of training, {rows['sentlab_pooler_named']['test']:.2f}."
        )
    return "\n\n".join(f"- {line}" for line in said)


def _index_rows(found: dict, first: str, timing: str) -> list[str]:
    """A table of indexes: bytes a passage, Recall@10 kept against float32, nDCG@10 where the record
    holds it, time a query."""
    ndcg = any("ndcg_at_10" in row for row in found.values())
    rows = [
        f"| {first} | bytes a passage | Recall@10 kept vs float32 |"
        + (" nDCG@10 (kept) |" if ndcg else "")
        + f" {timing} |",
        "|---|---:|---:|" + ("---:|" if ndcg else "") + "---:|",
    ]
    for name, row in found.items():
        kept = f" {row['ndcg_at_10']:.2f} ({row['ndcg_at_10_kept']:.3f}) |" if ndcg else ""
        rows.append(
            f"| {name} | {row['bytes_a_passage']:,} | {row['recall_at_10_kept']:.3f} |{kept} {row['ms_a_query']:.3f} |"
        )
    return rows


def retrieval_index_table(records: Path = RECORDS) -> str:
    """The test forum's passages in faiss at three precisions with float rescoring (record
    ``retrieval-minilm-cqadupstack``): Recall@10 kept against float32, bytes a passage, time a query."""
    index = record("retrieval-minilm-cqadupstack", records)["result"]["index"]
    rows = _index_rows(index["rows"], "index precision", "ms a query (faiss search, exact)")
    rows += [
        "",
        f"`{Path(index['model']).parent.parent.name if '/' in index['model'] else index['model']}`'s embeddings "
        f"({index['dim']} dimensions) of {index['passages']:,} passages and {index['queries']:,} queries; a packed "
        "index's top 20 rescored with the float query to give its top 10. Bytes a passage: the codes "
        "stored; sentence-transformers' exact uint8 search holds them in a float32 faiss index in memory "
        "(binary in a binary one).",
    ]
    return "\n".join(rows)


def plain_loading() -> str:
    """What plain sentence-transformers needs or loses for each kind of folder sentlab saves
    (``sentlab.training.model_card.PLAIN_LOADING``, which each model card quotes for its own kind)."""
    from sentlab.training.model_card import PLAIN_LOADING

    rows = ["| folder | with `SentenceTransformer` alone |", "|---|---|"]
    rows += [f"| {kind} | {text} |" for kind, text in sorted(PLAIN_LOADING.items())]
    rows += [
        "| every other (every other method, a static model, `supervised` with any loss) | `SentenceTransformer(path)` |"
    ]
    return "\n".join(rows)


def index_codes_table(records: Path = RECORDS) -> str:
    """sentlab's centred codes against sentence-transformers' search on the test forum (record
    ``index-codes-minilm``): Recall@10 and nDCG@10 kept against float32, bytes a passage, time a query."""
    found = record("index-codes-minilm", records)
    result, cpu = found["result"], found["machine"]["cpu"]
    named = {("float32 (numpy, every passage)" if k == "float32" else k): v for k, v in result["rows"].items()}
    rows = _index_rows(named, "index", "ms a query")
    rows += [
        "",
        f"`{result['model']}`'s embeddings ({result['dim']} dimensions) of {result['forum']}'s {result['passages']:,} "
        f"titles and {result['queries']:,} queries; each packed index's top {2 * 10} rescored by the float query "
        f"to give its top 10; {cpu['cores']}-core {cpu['model'].split(' (')[0]}, {found['date'][:10]} "
        f"(`python -m benchmarks run index-codes-minilm`). Bytes a passage: the codes searched in memory; "
        "`CodeIndex` also keeps the float rows on disk and reads only the candidates'. float32's time here is "
        "numpy's product with every passage, not the faiss search of the table above.",
    ]
    return "\n".join(rows)


def losses_table() -> str:
    """The supervised method's sentence-transformers losses (``sentlab.losses.catalog``), by kind."""
    from sentence_transformers.sentence_transformer import losses

    from sentlab.losses.catalog import ELSEWHERE, KINDS, LOSSES, SHORT_NAMES, cached_class_name, capabilities

    columns = {
        "texts": "`anchor`, `positive`, then `negative` or `negative_1` ... `negative_n`",
        "scored": "`text1`, `text2`, `score`",
        "binary": "`text1`, `text2`, `label` (0 or 1)",
        "classes": "`text`, `label` (a class: a number or a name)",
        "pair-classes": "`text1`, `text2`, `label` (a class)",
        "distill": "texts (`anchor`[, `positive`, negatives]); the labels from `supervised.teacher`",
    }
    short = {name: short for short, name in SHORT_NAMES.items()}
    rows = [
        "| `supervised.loss` | columns | negatives a row | `train.mini_batch_size` | `train.matryoshka_dims` |",
        "|---|---|---|---|---|",
    ]
    for kind in KINDS:
        for name, spec in LOSSES.items():
            if spec.kind != kind:
                continue
            label = f"`{name}`" + (f" (`{short[name]}`)" if name in short else "")
            negatives = "–"
            if kind in ("texts", "distill") and spec.teacher != "embedding":
                most = "any" if spec.max_negatives is None else str(spec.max_negatives)
                if spec.max_negatives == 0:
                    negatives = "none (pairs)"
                elif spec.min_negatives == spec.max_negatives:
                    negatives = f"exactly {most}"
                else:
                    negatives = f"{spec.min_negatives} to {most}"
            can = capabilities(getattr(losses, name), {})  # the record the config refuses keys by
            cached = cached_class_name(name)
            if cached and cached != name:
                chunks = f"yes, as `{cached}`"
            elif cached or can.no_gradient_cache is None:
                chunks = "yes"
            else:
                chunks = "its own `loss_args.mini_batch_size`" if spec.chunks_itself else "refused"
            matryoshka = "yes" if can.no_matryoshka is None else "refused"
            held = columns[kind]
            if kind == "texts" and spec.max_negatives == 0:  # pairs only
                held = "`anchor`, `positive`"
            elif kind == "texts" and spec.max_negatives == 1:  # one negative column
                held = "`anchor`, `positive`" + (", `negative`" if spec.min_negatives else "[, `negative`]")
            if spec.teacher == "embedding":  # every column learns the teacher's embedding of the first
                held = "`[text]` or `[source, translation]`; the labels: `supervised.teacher`'s embedding of the first"
                negatives = "none (refused)"
            rows.append(f"| {label} | {held} | {negatives} | {chunks} | {matryoshka} |")
    rows.append("")
    rows.append(
        "Refused, with where sentlab has them: " + "; ".join(f"`{n}` ({why})" for n, why in ELSEWHERE.items()) + "."
    )
    return "\n".join(rows)


def half_precision_table(records: Path = RECORDS) -> str:
    """Each loss's bf16 and fp16 error against fp32, the larger of its two ways of running (record
    ``half-precision-losses-cpu``)."""
    rows = record("half-precision-losses-cpu", records)["result"]["rows"]
    names = list(dict.fromkeys(r["loss"] for r in rows))
    out = [
        "| loss | bf16: abs. loss error | bf16: grad. error | fp16: abs. loss error | fp16: grad. error | fp16 skips |",
        "|---|---|---|---|---|---|",
    ]
    for name in names:
        mine = [r for r in rows if r["loss"] == name]

        def worst(dtype: str, key: str) -> float:
            return max(r[key] for r in mine if r["dtype"] == dtype)

        skips = max(r["fp16_calibration_skips"] for r in mine if r["dtype"] == "fp16")
        out.append(
            f"| {name} | {worst('bf16', 'abs_loss_error'):.1e} | {worst('bf16', 'grad_relative_error'):.1e} | "
            f"{worst('fp16', 'abs_loss_error'):.1e} | {worst('fp16', 'grad_relative_error'):.1e} | {skips} |"
        )
    tolerance = {d: max(r["grad_tolerance"] for r in rows if r["dtype"] == d) for d in ("bf16", "fp16")}
    out.append("")
    out.append(
        f"Gradient tolerances: {tolerance['bf16']:g} (bf16), {tolerance['fp16']:g} (fp16); every loss and gradient "
        f"finite: {all(r['finite'] for r in rows)}."
    )
    return "\n".join(out)


def rankencoder_inference_table(records: Path = RECORDS) -> str:
    """Eq. 7's cost by corpus size (record ``rankencoder-inference-minilm``)."""
    rows = record("rankencoder-inference-minilm", records)["result"]["results"]
    out = [
        "| corpus | index on disk | build | cosine, ms a pair | Eq. 7, ms a pair | Eq. 7 / cosine |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r['corpus_size']:,} | {r['index_bytes'] / 1e6:.1f} MB | {r['build_s']:.1f} s | "
            f"{r['cosine_ms_per_pair']:.1f} | {r['eq7_ms_per_pair']:.1f} | {r['eq7_over_cosine']:.2f} |"
        )
    return "\n".join(out)


def rawlm_throughput_table(records: Path = RECORDS) -> str:
    """The raw LM's training throughput by batch form (records ``rawlm-throughput-*``)."""
    rows = [
        ("sentences", "64 sentences of similar length, padded"),
        ("packed", "32 packed blocks of 64 tokens"),
        ("packed-compiled", "32 packed blocks, `--compile --fused`"),
    ]
    out = ["| batches | useful tokens/s | share of the measured fp32 matmul peak |", "|---|---:|---:|"]
    for name, label in rows:
        r = record(f"rawlm-throughput-{name}", records)["result"]
        out.append(f"| {label} | {r['useful_tokens_per_s']:,.0f} | {100 * r['share_of_peak']:.1f} % |")
    return "\n".join(out)


def rse_table(records: Path = RECORDS) -> str:
    """RSE, its All-Above baseline and the start model on every evaluation (record
    ``rse-evaluations-minilm``); the best of each column in bold, the relation named where RSE scores
    a task by one relation."""
    r = record("rse-evaluations-minilm", records)["result"]
    link, useb, sts, evalrank = r["link_prediction"], r["useb"], r["sts"], r["evalrank"]
    relations = [name for name in r["relations"] if f"rse_{name}" in useb]
    mix = " + ".join(f"{name} {weight:g}" for name, weight in r["sts_mix"].items())
    forums = len(useb["cqadupstack_forums"])

    def best_relation(task: str) -> tuple[str, float]:
        name = max(relations, key=lambda n: useb[f"rse_{n}"][task])
        return name, useb[f"rse_{name}"][task]

    rows = [
        ("start, cosine", sts["start"]["avg"], link["start"]["all"]["mrr"], useb["start"], evalrank["start"]),
        (
            "All-Above, cosine",
            sts["all_above"]["avg"],
            link["all_above"]["all"]["mrr"],
            useb["all_above"],
            evalrank["all_above"],
        ),
        (
            f"RSE, relational: {mix} (link prediction: each triple's own relation)",
            sts["rse_mix"]["avg"],
            link["rse"]["all"]["mrr"],
            useb["rse_mix"],
            evalrank["rse_mix"],
        ),
        ("RSE, plain cosine", sts["rse_cosine"]["avg"], None, useb["rse_cosine"], evalrank["rse_cosine"]),
    ]
    columns = [
        [row[1] for row in rows],
        [row[2] for row in rows],
        [row[3]["cqadupstack_map100"] for row in rows],
        [row[3]["twitterpara_ap"] for row in rows],
        [row[4]["mrr_corrected"] for row in rows],
    ]
    cqa, twitter = best_relation("cqadupstack_map100"), best_relation("twitterpara_ap")
    columns[2].append(cqa[1])
    columns[3].append(twitter[1])
    forms = ("{:.2f}", "{:.3f}", "{:.2f}", "{:.2f}", "{:.2f}")

    def cell(column: int, value) -> str:
        if value is None:
            return ""
        text = forms[column].format(value)
        return f"**{text}**" if value == max(v for v in columns[column] if v is not None) else text

    out = [
        f"| scoring | STS avg | link prediction MRR (all) | CQADupStack, {forums} forums | TwitterPara | EvalRank MRR (corrected protocol, this run's; the suite's: [Benchmarks](../results.md#evaluation-suite-on-all-minilm-l6-v2)) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for i, (label, *_rest) in enumerate(rows):
        out.append(f"| {label} | " + " | ".join(cell(c, columns[c][i]) for c in range(5)) + " |")
    out.append(f"| RSE, best relation for CQADupStack ({cqa[0]}) | | | {cell(2, cqa[1])} | | |")
    out.append(f"| RSE, best relation for TwitterPara ({twitter[0]}) | | | | {cell(3, twitter[1])} | |")
    return "\n".join(out)


def bibtex() -> str:
    """CITATION.cff as a BibTeX ``@misc`` entry (the entry types every BibTeX style knows)."""
    import yaml

    cff = yaml.safe_load((DOCS.parent / "CITATION.cff").read_text("utf-8"))

    def author(entry: dict) -> str:
        if entry.get("name"):  # an organisation: braced, so BibTeX does not split it into names
            return "{" + entry["name"] + "}"
        return ", ".join(part for part in (entry.get("family-names"), entry.get("given-names")) if part)

    fields = {
        "title": "{" + cff["title"] + "}",
        "author": " and ".join(author(entry) for entry in cff["authors"]),
        "year": str(cff["date-released"])[:4],
        "note": f"Version {cff['version']}, released {cff['date-released']}",
    }
    if cff.get("repository-code") or cff.get("url"):
        fields["howpublished"] = "\\url{" + (cff.get("repository-code") or cff.get("url")) + "}"
    body = ",\n".join(f"  {key} = {{{value}}}" for key, value in fields.items())
    return f"```bibtex\n@misc{{sentlab,\n{body}\n}}\n```"


def changelog() -> str:
    """CHANGELOG.md without its title (the repository's file, on the site)."""
    text = (DOCS.parent / "CHANGELOG.md").read_text("utf-8")
    body = text.split("\n", 1)[1].strip()
    return body.replace("](docs/", "](")


STATIC_TASKS = {
    "sts_b": "STS-B test",
    "sts_avg": "STS avg (7 tasks)",
    "retrieval_ndcg_at_10": "CQADupStack {forum} nDCG@10",
}
STATIC_WORDS = {"sts_b": "STS-B", "sts_avg": "the STS average", "retrieval_ndcg_at_10": "retrieval nDCG@10"}


def static_table(records: Path = RECORDS) -> str:
    """The static students of each teacher (record ``static-student-minilm``): each task's score as a
    fraction of its teacher's with the 95 % interval over seeds and items, the encode rate and the
    speed-up against its teacher in torch fp32 and in its fastest int8 setting on the same sentences, and
    the size on disk."""
    result = record("static-student-minilm", records)["result"]
    data, seconds = result["data"], result["seconds"]
    names = {k: v.format(forum=data["test_forum"]) for k, v in STATIC_TASKS.items()}
    rows = [
        "| model | "
        + " | ".join(names.values())
        + " | sentences / s | speed-up | over the fastest int8 teacher | MB on disk |",
        "|---|" + "---:|" * (len(names) + 4),
    ]

    def cells(found: dict) -> str:
        return " | ".join(
            f"{c['mean']:.2f}: {c['fraction_of_teacher']:.0%} [{c['fraction_ci95'][0]:.0%}, {c['fraction_ci95'][1]:.0%}]"
            for c in (found[k] for k in names)
        )

    for label, found in result["teachers"].items():
        scores, speed, sizes = found["scores"], found["speed"], found["bytes_on_disk"]
        teacher, fast = scores["teacher"], speed["fastest_teacher"]
        fp32 = speed["teacher"]["sentences_per_second"]
        rows.append(
            f"| **teacher: {label}** (torch fp32) | "
            + " | ".join(f"{teacher[k]:.2f}" for k in names)
            + f" | {fp32:,} | 1x | {fp32 / fast['sentences_per_second']:.2f}x | {sizes['teacher'] / 1e6:.0f} |"
        )
        rows.append(  # its export lives in the cache folder, not in the model's
            f"| teacher: {label} ({fast['setting']}) | {cells(scores['fastest_teacher'])} "
            f"| {fast['sentences_per_second']:,} | {fast['sentences_per_second'] / fp32:.1f}x | 1x | — |"
        )
        for row, _, speed_row in _static_students(found):
            rows.append(
                f"| {row} | {cells(scores[row])} | {speed_row['sentences_per_second']:,} | "
                f"{speed_row['speedup']:.1f}x | {speed_row['speedup_over_fastest']:.1f}x | {sizes[row] / 1e6:.0f} |"
            )
    seeds = len(result["seeds"])
    teacher = result["teachers"][next(iter(result["teachers"]))]["speed"]["teacher"]
    settings = ", ".join(f"{k} {v:,}" for k, v in teacher["settings"].items())
    rows += [
        "",
        f"A cell: the score (the mean over {seeds} seeds for the trained rows), as a fraction of the torch fp32 "
        "teacher's, with the 95 % interval of the difference over seeds and items divided by the teacher's "
        f"score. Students: {data['student_tokens']:,} tokens x {data['student_dims']} dimensions, the vocabulary "
        f"offered the {data['vocabulary_offered']:,} most frequent words of {data['wikipedia_sentences']:,} "
        f"Wikipedia sentences. Rows: 'distilled' is step 1; '+ corpus' is step 2 on those sentences (the last "
        "tenth held out); '+ titles' is step 2 instead on the "
        f"{data['titles']:,} titles of the {data['test_forum']} collection the retrieval card searches "
        f"(unlabelled; its vocabulary offered their {data['vocabulary_offered']:,} most frequent words: "
        f"{data['titles_student_tokens']:,} tokens); '+ pairs' and '+ titles + pairs' are those two, then step 3: "
        f"MNRL on {data['pairs']:,} duplicate-question pairs of {' and '.join(data['pairs_forums'])} (the "
        f"sentlab-trained teacher learnt the same pairs). Rates on {data['rate_sentences']:,} other Wikipedia sentences in one process, each "
        "the best of three rounds that take a teacher's every setting and student in turn: a teacher at batch 128 (all-MiniLM-L6-v2's settings, sentences / s: "
        f"{settings}; the fastest is scored in its own row), a student at batch 4096. MB on disk: the "
        "sentence-transformers model; the model2vec copy beside it in the same folder takes as much again. "
        f"Step 2's time on this machine, on the Wikipedia sentences: distillation {seconds['distill_seconds']:.0f} "
        f"s, the teacher's encoding {seconds['teacher_seconds']:.0f} s, training {seconds['train_seconds']:.0f} s.",
    ]
    return "\n".join(rows)


def _static_students(found: dict):
    """(student row, its cells, its speed) of one teacher's students in the record."""
    for row, cells in found["scores"].items():
        if row not in ("teacher", "fastest_teacher"):
            yield row, cells, found["speed"][row]


def _static_rows(result: dict):
    """(teacher, student row, its cells, its speed) of every student of the record."""
    for label, found in result["teachers"].items():
        for row, cells, speed in _static_students(found):
            yield label, row, cells, speed


def static_expect(records: Path = RECORDS) -> str:
    """The static page's what-to-expect lines (record ``static-student-minilm``): for each task the student
    that keeps the most of its teacher, with its speed-ups over the teacher in torch fp32 and in its fastest
    int8 setting, and the 100x / 95 % target as met or missed."""
    found = record("static-student-minilm", records)
    result, cpu = found["result"], found["machine"]["cpu"]
    target = result["target"]
    rows = list(_static_rows(result))
    best = []
    for key, word in STATIC_WORDS.items():
        label, row, cells, speed = max(rows, key=lambda r: r[2][key]["fraction_of_teacher"])
        best.append(
            f"of {word}, '{row}' of the {label} teacher: {cells[key]['fraction_of_teacher']:.0%} at "
            f"{speed['speedup']:.1f}x (and {speed['speedup_over_fastest']:.1f}x its fastest int8 setting)"
        )
    fastest = sorted({t["speed"]["fastest_teacher"]["setting"] for t in result["teachers"].values()})
    met = [
        r
        for r in rows
        if r[3]["speedup"] >= target["speedup"]
        and all(r[2][k]["fraction_of_teacher"] >= target["fraction_of_teacher"] for k in STATIC_TASKS)
    ]
    goal = (
        f"{target['speedup']}x its teacher's torch fp32 rate keeping {target['fraction_of_teacher']:.0%} of its score"
    )
    lines = [
        f"**Measured** (record `static-student-minilm`, the table in step 4, a {cpu['cores']}-core "
        f"{cpu['model'].split(' (')[0]} CPU): a static student encodes "
        f"{_span(r[3]['speedup'] for r in rows)} times as many sentences a second as its teacher in torch fp32, "
        f"and {_span(r[3]['speedup_over_fastest'] for r in rows)} times as many as the teacher in its fastest "
        f"int8 setting ({' or '.join(fastest)}). The student that keeps the most " + "; the most ".join(best) + ".",
        "",  # the verdict a paragraph of its own
        (
            f"**Target met:** a static student runs at {goal} on every task here."
            if met
            else f"**Target missed:** no student here runs at {goal} on every task: " + _static_missed(rows, target)
        ),
    ]
    return "\n".join("    " + line for line in lines)


def _span(values) -> str:
    """'LOW to HIGH (median MID)' of the students' speed-ups."""
    values = list(values)
    return f"{min(values):.1f} to {max(values):.1f} (median {statistics.median(values):.1f})"


def _static_missed(rows: list, target: dict) -> str:
    fast = [r for r in rows if r[3]["speedup"] >= target["speedup"]]
    if not fast:
        return f"none reaches {target['speedup']}x (the fastest: {max(r[3]['speedup'] for r in rows):.1f}x)."
    best = {k: max(r[2][k]["fraction_of_teacher"] for r in fast) for k in STATIC_WORDS}
    short = [f"{v:.1%} of {STATIC_WORDS[k]}" for k, v in best.items() if v < target["fraction_of_teacher"]]
    if not short:  # each task reached by some student, none reaching every task
        return f"among the students at {target['speedup']}x or more, none keeps it on every task at once."
    return f"the students at {target['speedup']}x or more keep at most " + ", ".join(short) + "."


def static_frontier(records: Path = RECORDS) -> str:
    """The frontier as a plot (record ``static-student-minilm``): each student's fraction of the teacher
    kept on each task against its speed-up, written to ``docs/assets/static-frontier.svg`` (the same bytes
    for the same record); returns the page's link to it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    found = record("static-student-minilm", records)
    result, cpu = found["result"], found["machine"]["cpu"]
    names = {k: v.format(forum=result["data"]["test_forum"]) for k, v in STATIC_TASKS.items()}
    machine = f"{cpu['cores']}-core {cpu['model'].split(' (')[0]}"  # the record's machine, as the box names it
    with matplotlib.rc_context({"svg.hashsalt": "sentlab"}):  # stable ids: the file changes only with the record
        return _static_frontier_figure(plt, result, names, machine)


def _static_frontier_figure(plt, result, names, machine: str) -> str:
    target = result["target"]
    figure, axes = plt.subplots(figsize=(6.4, 4.0))
    rows = list(_static_rows(result))
    for (key, name), marker in zip(names.items(), "os^"):
        for label, fill in zip(result["teachers"], ("full", "none")):
            mine = [r for r in rows if r[0] == label]
            xs = [speed["speedup"] for *_, speed in mine]
            ys = [cells[key]["fraction_of_teacher"] for _, _, cells, _ in mine]
            low = [y - cells[key]["fraction_ci95"][0] for (_, _, cells, _), y in zip(mine, ys)]
            high = [cells[key]["fraction_ci95"][1] - y for (_, _, cells, _), y in zip(mine, ys)]
            axes.errorbar(
                xs, ys, yerr=[low, high], fmt=marker, fillstyle=fill, capsize=3, label=f"{name}, {label} teacher"
            )
    labelled = set()
    for found in result["teachers"].values():  # a teacher in its fastest int8 setting
        fast = found["speed"]["fastest_teacher"]
        xs = [fast["speedup"]] * len(names)
        ys = [found["scores"]["fastest_teacher"][k]["fraction_of_teacher"] for k in names]
        label = None if fast["setting"] in labelled else f"a teacher, {fast['setting']}"
        labelled.add(fast["setting"])
        axes.scatter(xs, ys, marker="x", color="grey", label=label)
    axes.scatter([1], [1], marker="*", s=90, color="black", label="a teacher (torch fp32)")
    axes.axhline(target["fraction_of_teacher"], color="grey", linestyle="--", linewidth=0.8)
    axes.axvline(target["speedup"], color="grey", linestyle="--", linewidth=0.8)
    axes.set_xscale("log")
    axes.set_xlabel(f"encode rate, times the teacher's ({machine}, log scale)")
    axes.set_ylabel("fraction of the teacher's score kept")
    axes.set_ylim(0, 1.05)
    axes.legend(fontsize=6, loc="lower left")
    axes.set_title("Static students: speed against quality (dashed: the 100x / 95 % target)", fontsize=9)
    figure.tight_layout()
    import io

    svg = io.BytesIO()
    figure.savefig(svg, format="svg", metadata={"Date": None})
    plt.close(figure)
    path = DOCS / "assets" / "static-frontier.svg"
    if not path.is_file() or path.read_bytes() != svg.getvalue():  # written only when the record moved it
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(svg.getvalue())
    return "![Fraction of the teacher kept against the speed-up](../assets/static-frontier.svg)"


GENERATORS = {
    "bibtex": bibtex,
    "rse": rse_table,
    "rawlm_throughput": rawlm_throughput_table,
    "rankencoder_inference": rankencoder_inference_table,
    "changelog": changelog,
    "half_precision": half_precision_table,
    "losses": losses_table,
    "cli": cli_reference,
    "presets": presets_table,
    "data": data_table,
    "records": records_table,
    "config": config_reference,
    "preset": preset_yaml,
    "hard_negatives": hard_negatives_table,
    "storage": storage_table,
    "matryoshka": matryoshka_table,
    "adapters": adapters_table,
    "retrieval": retrieval_table,
    "distill": distill_table,
    "distill_verdict": distill_verdict,
    "distill_expect": distill_expect,
    "static_potion": static_potion,
    "mpnet_paths": mpnet_paths,
    "retrieval_expect": retrieval_expect,
    "retrieval_verdict": retrieval_verdict,
    "retrieval_index": retrieval_index_table,
    "index_codes": index_codes_table,
    "plain_loading": plain_loading,
    "static": static_table,
    "static_expect": static_expect,
    "static_frontier": static_frontier,
}


TRANSCRIBED = "† from a run whose code was not recorded"  # the line a page with such a figure carries


def _figure(match: re.Match, known: dict[str, dict]) -> str:
    """A figure's marker with its value; a figure of a transcribed record (one the runner did not keep)
    is marked with † (its page says what that means: ``TRANSCRIBED``)."""
    name = match.group("name")
    if name not in known:
        raise KeyError(f"figure {name!r} is not in docs/figures.yaml (a figure names its record there)")
    mark = "†" if known[name].get("transcribed") else ""
    return f"<!--fig:{name}-->{known[name]['value']}{mark}<!--/fig-->"


REGION = re.compile(
    r"(<!-- sentlab:(?P<name>\w+) begin[^>]*-->\n)(?P<body>.*?)(<!-- sentlab:(?P=name) end -->)", re.DOTALL
)


def refreshed(markdown: str) -> str:
    """``markdown`` with each generated region rebuilt from the code."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        markdown = REGION.sub(lambda m: f"{m.group(1)}\n{GENERATORS[m.group('name')]()}\n\n{m.group(4)}", markdown)
        known = figures()
        markdown = FIGURE.sub(lambda m: _figure(m, known), markdown)
        if any(known[m.group("name")].get("transcribed") for m in FIGURE.finditer(markdown)):
            if TRANSCRIBED not in markdown:
                raise KeyError(f"a page quotes a transcribed figure (†) without the line {TRANSCRIBED!r}")
        return markdown
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous


def pages(docs: Path = DOCS) -> list[Path]:
    """The pages of ``docs`` (and, for the repository's docs folder, the README beside it)."""
    readme = [docs.parent / "README.md"] if docs == DOCS else []
    return [*sorted(docs.rglob("*.md")), *readme]


def stale_pages(docs: Path = DOCS) -> list[Path]:
    """The pages whose generated regions or figures differ from what the code and figures.yaml give."""
    return [page for page in pages(docs) if refreshed(text := page.read_text("utf-8")) != text]


def on_page_markdown(markdown: str, page=None, **kwargs) -> str:
    if refreshed(markdown) != markdown:
        name = getattr(getattr(page, "file", None), "src_path", "a page")
        raise RuntimeError(f"{name}: its generated reference is stale; run python docs/hooks.py")
    return markdown


def main(argv: list[str]) -> int:
    stale = stale_pages()
    if "--check" in argv:
        for page in stale:
            print(f"{page.relative_to(DOCS.parent)}: stale generated reference (python docs/hooks.py)")
        return 1 if stale else 0
    for page in stale:
        page.write_text(refreshed(page.read_text("utf-8")), encoding="utf-8")
        print(f"rewrote {page.relative_to(DOCS.parent)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(DOCS.parent / "src"))
    sys.exit(main(sys.argv[1:]))
