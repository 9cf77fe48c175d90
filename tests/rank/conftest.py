"""Fixtures for the rank tests: a tiny encoder without dropout and a corpus index built with it."""

from __future__ import annotations

import numpy as np
import pytest

from sentlab.encoders.loading import build_encoder
from sentlab.rank.index import CorpusIndex
from tests.conftest import DEVICE, WORDS


@pytest.fixture(scope="session")
def encoder(tiny_backbone_no_dropout):
    return build_encoder(str(tiny_backbone_no_dropout), "mean", device=str(DEVICE))


@pytest.fixture(scope="session")
def index(encoder):
    rng = np.random.default_rng(0)
    corpus = list(dict.fromkeys(" ".join(rng.choice(WORDS, size=rng.integers(3, 9))) for _ in range(400)))
    return CorpusIndex.build(encoder, corpus, "tiny")
