"""Query and document prompts: the text a model expects before a query or a passage ("query: " /
"passage: " for e5, an instruction for bge's queries), as sentence-transformers keeps them in a model's
``config_sentence_transformers.json`` (``prompts``) and applies them in ``encode_query`` /
``encode_document``: the prompt named ``query`` for queries, the first of ``document``, ``passage``,
``corpus`` that is set for documents (:func:`role_prompt`).

sentlab puts a prompt before its texts (:func:`prompted`), so an embedding cache keyed by the texts
keeps prompted and plain texts apart, and every scorer and backend encodes them alike. That equals
sentence-transformers' ``encode(prompt=...)`` for a model whose pooling reads the prompt's tokens
(``include_prompt``, every pooling's default); a model whose pooling leaves them out (INSTRUCTOR's
recipe), or that puts a default prompt before every text (``default_prompt_name``), would be encoded
otherwise than sentence-transformers encodes it, so a prompt for it is refused in one line
(:func:`check_prompts_apply`)."""

from __future__ import annotations

from collections.abc import Sequence

from sentence_transformers import SentenceTransformer

from sentlab.errors import ConfigError

DOCUMENT_PROMPT_NAMES = ("document", "passage", "corpus")  # encode_document's order


def role_prompt(model: SentenceTransformer | None, role: str) -> str:
    """The model's own prompt for ``role`` (``query`` or ``document``), "" when it has none: for a
    document the first of ``document``, ``passage``, ``corpus`` that is not empty. (sentence-transformers
    6 gives every model an empty ``document`` prompt, which its ``encode_document`` takes first, so an
    e5 model's ``passage`` prompt would be passed over there; sentlab reads it.)"""
    prompts = getattr(model, "prompts", None) or {}
    names = ("query",) if role == "query" else DOCUMENT_PROMPT_NAMES
    return next((prompts[name] for name in names if prompts.get(name)), "")


def _inner(encoder: object) -> object | None:
    """What ``encoder`` encodes through: a scorer's model, a cache's model or encoder, a stored form's
    cache (:class:`~sentlab.evaluation.quantized.QuantizedEmbeddings`)."""
    return getattr(encoder, "model", None) or getattr(encoder, "encoder", None) or getattr(encoder, "cache", None)


def model_of(encoder: object) -> SentenceTransformer | None:
    """The sentence-transformers model behind a scorer, an embedding cache, a stored form (``--dims``,
    ``--embedding-precision``) or a model itself."""
    for _ in range(5):
        if isinstance(encoder, SentenceTransformer):
            return encoder
        encoder = _inner(encoder)
        if encoder is None:
            return None
    return None


def calibrate_for_prompts(encoder: object, prompts: Sequence[str]) -> None:
    """Tell a stored form behind ``encoder`` (int8 / uint8 ranges) which prompts its texts will carry,
    so each prompted text is quantized with the ranges of its prompt's calibration, as ``sentlab encode
    --prompt`` writes the codes; nothing for any other encoder."""
    for _ in range(5):
        if encoder is None or isinstance(encoder, SentenceTransformer):
            return
        if hasattr(encoder, "use_prompts"):
            encoder.use_prompts([p for p in prompts if p])
            return
        encoder = _inner(encoder)


# a built-in family's task, as a model's own prompts may name it (MTEB's task types, which embeddinggemma's
# configuration uses as prompt names); a model without such a prompt encodes the family's texts plain
FAMILY_PROMPT_NAMES = {"sts": ("STS",), "transfer": ("Classification",)}


def task_prompt(model: SentenceTransformer | None, names: Sequence[str]) -> tuple[str, str]:
    """The model's own prompt named by the first of ``names`` it has (MTEB's task types, matched
    without case: ``STS``, ``Reranking``), as its name and text, or ``("", "")`` when it has none."""
    prompts = getattr(model, "prompts", None) or {}
    for name in names:
        for key, text in prompts.items():
            if key.lower() == name.lower() and text:
                return key, text
    return "", ""


def mteb_prompt(model: SentenceTransformer | None, task_type: str, side: str | None = None) -> tuple[str, str]:
    """The model's own prompt as MTEB chooses it for a task of ``task_type`` (``Retrieval``) on ``side``
    (``query`` / ``document``; None for a symmetric task): ``TYPE-side``, then ``TYPE``, then ``side``."""
    names = [f"{task_type}-{side}", task_type, side] if side else [task_type]
    return task_prompt(model, names)


def family_prompt(model: SentenceTransformer | None, family: str) -> tuple[str, str]:
    """The model's own prompt for the built-in family ``family`` (its name and text: ``("STS", "task:
    sentence similarity | query: ")``), or ``("", "")`` when it has none."""
    return task_prompt(model, FAMILY_PROMPT_NAMES.get(family, ()))


def check_prompts_apply(model: SentenceTransformer | None, prompts: Sequence[str], where: str) -> None:
    """A prompt put before the texts equals sentence-transformers' prompt for ``model`` (module doc);
    otherwise one line."""
    if model is None or not any(prompts):
        return
    if model.default_prompt_name is not None:
        raise ConfigError(
            f"{where}: the model puts its default prompt {model.default_prompt_name!r} before every text, so a "
            "query or document prompt would follow it; give the prompts as empty texts ('') to encode with its "
            "default prompt only"
        )
    if any(getattr(module, "include_prompt", True) is False for module in model):
        raise ConfigError(
            f"{where}: the model's pooling leaves the prompt's tokens out (include_prompt: false), which a "
            "prompt put before the text does not; give the prompts as empty texts ('')"
        )


def resolve_prompts(
    model: SentenceTransformer | None, query: str | None, document: str | None, where: str
) -> dict[str, str]:
    """The query and document prompts to encode with: those given (``""``: none), else the model's own
    (:func:`role_prompt`); checked with :func:`check_prompts_apply`."""
    chosen = {
        "query": role_prompt(model, "query") if query is None else query,
        "document": role_prompt(model, "document") if document is None else document,
    }
    check_prompts_apply(model, list(chosen.values()), where)
    return chosen


def prompted(texts: Sequence[str], prompt: str) -> list[str]:
    """``texts`` with ``prompt`` before each (unchanged without one)."""
    return [prompt + text for text in texts] if prompt else list(texts)


def keep_training_prompts(
    model: SentenceTransformer, prompts: dict[str, str] | None, columns: Sequence[str]
) -> dict[str, str]:
    """The saved model's own ``query`` and ``document`` prompts: exactly those training put before the
    anchor and the positive ("" for none), its other document prompts (``passage``, ``corpus``) removed,
    so a model trained with "query: " before its queries is encoded so afterwards (sentence-transformers'
    ``encode_query`` / ``encode_document``, sentlab's cards, mining) and one trained without prompts is
    not given its start model's. Nothing changes for a method without prompts (``prompts`` None) or
    rows without an anchor (``columns``: the training table's; pairs of two texts alike). Returns the
    prompts set, by name."""
    if prompts is None or "anchor" not in columns:
        return {}
    kept = {"query": prompts.get("anchor", ""), "document": prompts.get("positive", "")}
    default = model.default_prompt_name  # its entry stays: sentence-transformers refuses a default it lacks
    others = {k: v for k, v in model.prompts.items() if k not in ("query", *DOCUMENT_PROMPT_NAMES) or k == default}
    model.prompts = {**others, **kept}
    return kept
