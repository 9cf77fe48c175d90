"""What the GPU guide claims of a step, shown on any device: every loss's forward is captured by
torch.compile as one graph (``fullgraph=True``) in which no shape and no value depends on the data (no
``.item()``, no boolean-mask selection: nothing the host must read back from the device before it can
go on), and further steps over other batches and masks of the same shape reuse that graph (no
recompilation). The graph is inspected as captured (a backend that records it and runs it as is): the
claim is about what a step asks of the device, not about the kernels a compiler would generate."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import torch._dynamo
from sentence_transformers.base.losses import merged_forward
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

from sentlab import devices
from sentlab.methods import validate_config
from tests.losses.test_plain_trainer import LOSS_CLASSES, build, sentence_model

LENGTH = 12  # every batch is padded to this many tokens: the steps differ in content, not in shape

# The losses whose step is not one graph, each with the reason (the GPU guide says the same).
NOT_ONE_GRAPH = {
    "GradientCache": "Gradient Cache runs backward passes of its own inside the forward, one a chunk",
    "FlowNLLLoss": "normflows' ActNorm tests its data-dependent-initialisation flag (a tensor) with a Python if",
}


class Captured:
    """A torch.compile backend that keeps the graphs it is given and runs them unchanged."""

    def __init__(self):
        self.graphs: list[torch.fx.GraphModule] = []

    def __call__(self, graph: torch.fx.GraphModule, example_inputs):
        self.graphs.append(graph)
        return graph.forward

    def data_dependent(self) -> list[str]:
        """The operations whose shape or value the host could only know by reading the device (a
        shape or a Python number that is an "unbacked" symbol: known only once the data is)."""
        return [
            f"{node.op} {node.target}"
            for graph in self.graphs
            for node in graph.graph.nodes
            if (value := node.meta.get("example_value")) is not None and free_unbacked_symbols(value)
        ]


def step_graphs(loss, batches) -> Captured:
    """Run ``loss`` compiled with ``fullgraph=True`` over ``batches`` (a recompilation is an error),
    backward included; the graphs it captured."""
    captured = Captured()
    torch._dynamo.reset()
    compiled = torch.compile(loss, fullgraph=True, backend=captured, dynamic=False)
    with torch._dynamo.config.patch(error_on_recompile=True):
        for features, labels in batches:
            value = compiled(features, labels)
            assert value.shape == () and torch.isfinite(value)
            value.backward()
    return captured


def batch(model, dataset, rows: slice, device):
    """The loss's inputs for ``rows`` of ``dataset``: each text column tokenised to LENGTH tokens, and the
    labels where the dataset has them."""
    part = dataset[rows]
    columns = [c for c in part if c != "label"]  # as the rows read (TSDAE's noise is a transform)

    def tokens(texts):
        encoded = model.tokenizer(texts, padding="max_length", truncation=True, max_length=LENGTH, return_tensors="pt")
        return {k: v.to(device) for k, v in encoded.items()}

    labels = torch.tensor(part["label"], device=device) if "label" in part else None
    return [tokens(part[c]) for c in columns], labels


@pytest.mark.parametrize("name", [n for n in LOSS_CLASSES if n not in NOT_ONE_GRAPH])
def test_each_loss_step_is_one_static_graph_that_later_batches_reuse(name, tmp_path, monkeypatch, device):
    # a GPU step's paths on any device: frozen tables copied once and gathered on the device, ranks by torch
    monkeypatch.setattr(devices, "runs_on_host", lambda device: False)
    # sentence-transformers' switch for merging the columns' forwards is a ContextVar, which dynamo does
    # not trace (a Python switch, no device value): its value during training, as a constant
    monkeypatch.setattr(merged_forward, "_MERGING_DISABLED", SimpleNamespace(get=lambda: False))
    torch.manual_seed(0)
    model = sentence_model(tmp_path / "model")
    loss, dataset, _ = build(name, model, tmp_path)
    loss.to(device).train()
    batches = [batch(model, dataset, slice(6 * step, 6 * step + 6), device) for step in range(4)]
    loss(*batches[0]).backward()  # the first step, uncompiled: copies a frozen table to the device once
    captured = step_graphs(loss, batches[1:])  # new rows and, for MLM, new masks every step
    assert len(captured.graphs) == 1
    assert captured.data_dependent() == []


def test_the_check_finds_a_boolean_mask_selection_and_a_read_back(device):
    """The test above can fail: MLM's former head, which selected the chosen positions with a boolean
    mask, and a loss that reads a number back (``.item()``) are both found."""

    class Selecting(torch.nn.Module):
        def forward(self, features, labels):
            x = features[0]["x"]
            return x[x > 0].sum()

    class ReadingBack(torch.nn.Module):
        def forward(self, features, labels):
            x = features[0]["x"]
            return x.sum() / x.abs().max().item()

    for loss in (Selecting(), ReadingBack()):
        x = torch.randn(8, device=device, requires_grad=True)
        with torch._dynamo.config.patch(capture_scalar_outputs=True):  # let .item() be captured, to be found
            found = step_graphs(loss, [([{"x": x}], None)]).data_dependent()
        assert found, type(loss).__name__


def test_a_packed_pretraining_run_compiles_each_network_once_whatever_the_masks(corpus_file, tmp_path, monkeypatch):
    """The engine's step as ``train.compile`` runs it: MLM over packed blocks (every batch the same
    shape), each compiled network captured as one graph with no data-dependent shape or value, and
    no recompilation over the steps' different masks."""
    from sentlab.training import engine, runtime
    from tests.methods.test_mlm_pretraining import rawlm_config

    lines = corpus_file.read_text().splitlines()
    (tmp_path / "heldout.txt").write_text("\n".join(lines[:20]) + "\n", encoding="utf-8")
    corpus = tmp_path / "train.txt"
    corpus.write_text("\n".join(lines[20:] * 4) + "\n", encoding="utf-8")
    tree = rawlm_config(corpus, tmp_path / "heldout.txt", tmp_path / "run", max_steps=3, compile=True).to_tree()
    # no held-out evaluation: its no-grad forward is a graph of its own; this is the training step's
    tree["mlm"].update({"pack": True, "group_by_length": False, "heldout": None})
    cfg = validate_config(tree)
    captured, compile_ = Captured(), torch.compile
    monkeypatch.setattr(devices, "runs_on_host", lambda device: False)  # the step an accelerator runs
    monkeypatch.setattr(
        runtime.torch, "compile", lambda fn: compile_(fn, fullgraph=True, backend=captured, dynamic=False)
    )
    torch._dynamo.reset()
    with torch._dynamo.config.patch(error_on_recompile=True):
        paths = engine.train(cfg)
    import json

    record = json.loads(paths.runtime.read_text())["compile"]
    assert record["networks"] == ["encoder.0.model", "head.bert", "head.cls"]
    # a graph each for the two networks MLM's step runs (the head's body, whose weights are the encoder's,
    # and its prediction layer), built once: the three steps' masks differ, no network is captured again
    assert len(captured.graphs) == 2 and record["graphs"] == 2
    assert captured.data_dependent() == []
