"""sentlab: learn sentence embeddings with little or no labelled data, and measure them honestly."""

from sentlab.errors import SentlabError

__version__ = "0.1.0"
__all__ = ["SentlabError", "__version__"]
