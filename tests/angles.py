"""A vector function for tests: each text is a unit vector at a given angle (degrees), so every
cosine in a hand computation is cos(angle difference)."""

from __future__ import annotations

import numpy as np


def angle_vectors(angles: dict[str, float], offset: tuple[float, float] = (0.0, 0.0)):
    def vectors(texts):
        missing = [t for t in texts if t not in angles]
        assert not missing, f"no angle for {missing[:3]}"
        theta = np.radians([angles[t] for t in texts])
        return np.stack([np.cos(theta) + offset[0], np.sin(theta) + offset[1]], axis=1).astype(np.float32)

    return vectors
