"""Task cards: each kind by hand, and a built-in task re-expressed as a card gives the
built-in figure exactly."""

import json

import numpy as np
import pytest

from sentlab.errors import DataError
from sentlab.evaluation.task_cards import best_threshold_f1, load_task_card, ranking_metrics, score_task_card
from tests.angles import angle_vectors


class AngleScorer:
    """A pair scorer over unit vectors at known angles: every score is cos(angle difference)."""

    def __init__(self, angles):
        self.vectors = angle_vectors(angles)

    def encode(self, sentences):
        return self.vectors(list(sentences))

    def score(self, a, b):
        return (self.vectors(list(a)) * self.vectors(list(b))).sum(axis=1)


def card(tmp_path, text):
    path = tmp_path / "card.yaml"
    path.write_text(text, encoding="utf-8")
    return load_task_card(path)


def test_labelled_pairs_by_hand(tmp_path):
    (tmp_path / "pairs.tsv").write_text("a\tb\tlabel\nq\tx\t1\nq\ty\t0\nq\tz\t1\nq\tw\t0\n", encoding="utf-8")
    scorer = AngleScorer({"q": 0, "x": 10, "y": 20, "z": 30, "w": 40})  # scores fall x > y > z > w
    result = score_task_card(
        scorer, card(tmp_path, "name: t\nkind: labelled-pairs\nfile: pairs.tsv\ncolumns: [a, b, label]\n")
    )
    # ranked labels 1, 0, 1, 0: AP = (1 + 2/3) / 2; best F1: threshold at z -> P 2/3, R 1 -> 0.8, accuracy 3/4
    assert result.scores["ap"] == pytest.approx(100 * (1 + 2 / 3) / 2)
    assert result.scores["f1"] == pytest.approx(80.0) and result.scores["accuracy"] == pytest.approx(75.0)
    f1, _, threshold = best_threshold_f1(np.asarray([1.0, 0.0, 1.0]), np.asarray([0.5, 0.5, 0.1]))
    assert threshold == 0.1 and f1 == pytest.approx(0.8)  # a tie at 0.5 is taken whole


def test_retrieval_by_hand_in_the_beir_layout(tmp_path):
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": "", "text": d}) + "\n" for d in ("d1", "d2", "d3")), encoding="utf-8"
    )
    (tmp_path / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "q"}) + "\n" + json.dumps({"_id": "q2", "text": "r"}) + "\n", encoding="utf-8"
    )
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\nq1\td3\t1\n", encoding="utf-8")
    scorer = AngleScorer({"q": 0, "r": 90, "d1": 10, "d2": 20, "d3": 50})
    text = "name: r\nkind: retrieval\ncorpus: corpus.jsonl\nqrels: qrels.tsv\nqueries: queries.jsonl\nk: 2\n"
    result = score_task_card(scorer, card(tmp_path, text))
    # q1 ranks d1, d2, d3: hits at 2 and 3; q2 has no judgement and is left out
    assert result.n == 1 and result.extra["queries_without_judgements"] == 1
    assert result.scores["map@2"] == pytest.approx(100 * (1 / 2) / 2)  # trec: over the 2 relevant ones
    assert result.main_metric == "ndcg@10"  # the headline, unless the card names another
    assert result.scores["recall@2"] == pytest.approx(50.0) and result.scores["mrr@10"] == pytest.approx(50.0)
    ideal = 1 + 1 / np.log2(3)
    assert result.scores["ndcg@10"] == pytest.approx(100 * (1 / np.log2(3) + 1 / np.log2(4)) / ideal)
    useb = score_task_card(scorer, card(tmp_path, text + "map: useb\n"))
    assert useb.scores["map@2"] == pytest.approx(50.0)  # one hit in the top 2, at rank 2
    assert ranking_metrics([False, False], 1, 2)["map@2"] == 0.0
    # graded: d3 judged 3, d2 judged 1; nDCG's gains are the grades, its ideal ranks d3 first
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\nq1\td3\t3\nq1\td1\t0\n")
    graded = score_task_card(scorer, card(tmp_path, text + "main_metric: map@2\n"))
    ideal = 3 + 1 / np.log2(3)
    assert graded.scores["ndcg@10"] == pytest.approx(100 * (1 / np.log2(3) + 3 / np.log2(4)) / ideal)
    assert graded.main_metric == "map@2" and graded.main == graded.scores["map@2"]  # a grade of 0: not relevant
    with pytest.raises(DataError, match="main_metric: 'map@100' is not one of ndcg@10, map@2, recall@2, mrr@10"):
        card(tmp_path, text + "main_metric: map@100\n")
    with pytest.raises(DataError, match="main_metric: read for kind retrieval only"):
        card(tmp_path, "name: p\nkind: scored-pairs\nfile: qrels.tsv\nmain_metric: ndcg@10\n")


def test_scored_pairs_card_equals_the_builtin_stsb(tiny_backbone, data_dir, tmp_path):
    from sentlab.data.sts import load_sts_task
    from sentlab.encoders import build_encoder
    from sentlab.evaluation import CosineScorer
    from sentlab.evaluation.sts import score_task

    pairs = load_sts_task("STS-B", data_dir)
    rows = [
        json.dumps({"s1": a, "s2": b, "score": float(s)})
        for a, b, s in zip(pairs.sentences1, pairs.sentences2, pairs.scores)
    ]
    (tmp_path / "stsb.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    scorer = CosineScorer(build_encoder(str(tiny_backbone), "mean"))
    result = score_task_card(
        scorer, card(tmp_path, "name: stsb\nkind: scored-pairs\nfile: stsb.jsonl\ncolumns: [s1, s2, score]\n")
    )
    assert result.n == len(pairs.scores)
    assert result.main == pytest.approx(score_task(scorer, pairs).spearman, abs=1e-9)


@pytest.mark.parametrize(
    "text, message",
    [
        ("name: x\nkind: pairs\n", "kind"),
        ("name: x\nkind: scored-pairs\nfile: p.tsv\ncolumns: [a, b]\n", r"needs \[text1, text2, score\]"),
        ("name: x\nkind: retrieval\nqueries: q.jsonl\nqrels: r.tsv\n", "needs 'corpus'"),
        ("name: x\nkind: retrieval\ncorpus: c.jsonl\nqueries: q.jsonl\nqrels: r.tsv\nextra: 1\n", "extra"),
    ],
)
def test_bad_cards_are_one_line_errors(tmp_path, text, message):
    with pytest.raises(DataError, match=message):
        score_task_card(AngleScorer({}), card(tmp_path, text))


def test_reranking_by_hand(tmp_path):
    rows = [
        {"query": "q", "positive": ["p1", "p2"], "negative": ["n1"]},
        {"query": "r", "positive": ["p3"], "negative": ["n2", "n3"]},
        {"query": "s", "positive": [], "negative": ["n1"]},
    ]  # no positive: left out, counted
    (tmp_path / "rerank.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    scorer = AngleScorer({"q": 0, "r": 100, "s": 0, "p1": 10, "n1": 20, "p2": 30, "p3": 50, "n2": 90, "n3": 110})
    result = score_task_card(scorer, card(tmp_path, "name: rr\nkind: reranking\nfile: rerank.jsonl\n"))
    # q ranks p1, n1, p2 -> AP (1 + 2/3) / 2; r ranks n2 (10 deg), n3 (10 deg, later: stable), p3 -> AP 1/3
    assert result.n == 2 and result.extra["queries_without_both_labels"] == 1
    assert result.scores["map"] == pytest.approx(100 * ((1 + 2 / 3) / 2 + 1 / 3) / 2)
    assert result.scores["mrr@10"] == pytest.approx(100 * (1 + 1 / 3) / 2)
    assert result.extra["items"]["values"] == pytest.approx([(1 + 2 / 3) / 2, 1 / 3])


def test_classification_on_frozen_embeddings(tmp_path):
    angles = {f"a{i}": i for i in range(12)} | {f"b{i}": 180 + i for i in range(12)}
    angles |= {"ta": 5, "tb": 185, "wrong": 3}
    train = "text\tlabel\n" + "".join(f"a{i}\tyes\nb{i}\tno\n" for i in range(12))
    (tmp_path / "train.tsv").write_text(train, encoding="utf-8")
    (tmp_path / "test.tsv").write_text("text\tlabel\nta\tyes\ntb\tno\nwrong\tno\n", encoding="utf-8")
    result = score_task_card(
        AngleScorer(angles), card(tmp_path, "name: c\nkind: classification\nfile: train.tsv\ntest: test.tsv\n")
    )
    # two well-separated clusters: every test sentence gets its cluster's label, "wrong" is near "yes"
    assert result.n == 3 and result.main == pytest.approx(200 / 3)
    assert result.extra["items"]["values"] == [1.0, 1.0, 0.0]
    (tmp_path / "bad.tsv").write_text("text\tlabel\nta\tmaybe\n", encoding="utf-8")
    with pytest.raises(DataError, match="labels not in train.tsv: maybe"):
        score_task_card(
            AngleScorer(angles), card(tmp_path, "name: c\nkind: classification\nfile: train.tsv\ntest: bad.tsv\n")
        )


def test_every_card_result_carries_an_interval(tmp_path):
    (tmp_path / "pairs.tsv").write_text(
        "a\tb\tscore\n" + "".join(f"q\tx{i}\t{i % 5}\n" for i in range(30)), encoding="utf-8"
    )
    scorer = AngleScorer({"q": 0} | {f"x{i}": 7 * i for i in range(30)})
    result = score_task_card(
        scorer, card(tmp_path, "name: s\nkind: scored-pairs\nfile: pairs.tsv\ncolumns: [a, b, score]\n")
    )
    low, high = result.extra["ci95"]["spearman"]
    assert low <= result.main <= high and high - low > 0


def test_non_utf8_reranking_file_is_a_one_line_error(tmp_path):
    (tmp_path / "rerank.jsonl").write_bytes(b'{"query": "\xff"}\n')
    with pytest.raises(DataError, match="not valid UTF-8"):
        score_task_card(AngleScorer({}), card(tmp_path, "name: rr\nkind: reranking\nfile: rerank.jsonl\n"))


def test_reranking_card_equals_the_builtin_askubuntu(tiny_backbone, tmp_path):
    from sentlab.data.useb import load_askubuntu
    from sentlab.encoders import build_encoder
    from sentlab.evaluation import CosineScorer
    from sentlab.evaluation.useb import score_askubuntu
    from tests.fake_data import write_askubuntu

    queries = load_askubuntu(write_askubuntu(tmp_path))
    rows = [
        {
            "query": q.query,
            "positive": [c for c, i in zip(q.candidates, q.candidate_ids) if i in q.relevant],
            "negative": [c for c, i in zip(q.candidates, q.candidate_ids) if i not in q.relevant],
        }
        for q in queries
    ]
    (tmp_path / "rerank.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    scorer = CosineScorer(build_encoder(str(tiny_backbone), "mean"))
    result = score_task_card(scorer, card(tmp_path, "name: au\nkind: reranking\nfile: rerank.jsonl\n"))
    builtin = score_askubuntu(scorer.encode, queries)
    # both rank the same cosines, computed in float64 (card) or float32 (built-in): they agree when no two
    # candidates of a query are closer than float32 rounding (~1e-7), checked here with a wide margin
    for q in queries:
        cosines = np.sort(scorer.score([q.query] * len(q.candidates), q.candidates))
        assert np.diff(cosines).min() > 1e-5
    assert result.n == builtin.n and result.main == pytest.approx(builtin.main, abs=1e-9)


PAIRS = "a\tb\tscore\nq\tx\t1\nq\ty\t0\nq\tz\t1\n"
RETRIEVAL = "name: r\nkind: retrieval\ncorpus: c.jsonl\nqueries: q.jsonl\nqrels: r.tsv\n"


@pytest.mark.parametrize(
    "kind, files, extra, message",
    [
        (
            "scored-pairs",
            {"p.tsv": PAIRS + "q\tw\tlots\n"},
            "file: p.tsv\ncolumns: [a, b, score]\n",
            r"p.tsv:5: score 'lots' is not a number",
        ),
        (
            "scored-pairs",
            {"p.tsv": PAIRS + "q\tw\t1\t2\n"},
            "file: p.tsv\ncolumns: [a, b, score]\n",
            r"p.tsv:5: row has 4 fields, the header 3",
        ),
        (
            "labelled-pairs",
            {"p.tsv": PAIRS.replace("\t0\n", "\t2\n")},
            "file: p.tsv\ncolumns: [a, b, score]\n",
            "must hold both labels 0 and 1",
        ),
        (
            "retrieval",
            {"r.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td9\t1\n"},
            "",
            r"r.tsv: corpus id 'd9' is not in c.jsonl \(1 unknown id",
        ),
        (
            "retrieval",
            {"r.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t1\nq7\td2\t1\n"},
            "",
            r"r.tsv: query id 'q7' is not in q.jsonl",
        ),
        (
            "retrieval",
            {"r.tsv": "query-id\tcorpus-id\tscore\nq1\td1\tyes\n"},
            "",
            r"r.tsv:2: score 'yes' is not a number",
        ),
        (
            "reranking",
            {"rr.jsonl": '{"query": "q", "positive": [1], "negative": ["n"]}\n'},
            "file: rr.jsonl\n",
            r"rr.jsonl:1: 'positive' must be a list of non-empty texts",
        ),
        ("classification", {"t.tsv": "text\tlabel\na\tyes\nb\tyes\n"}, "file: t.tsv\n", "needs at least two labels"),
    ],
)
def test_bad_input_of_every_card_kind_is_a_one_line_error(tmp_path, kind, files, extra, message):
    (tmp_path / "c.jsonl").write_text('{"_id": "d1", "text": "x"}\n{"_id": "d2", "text": "y"}\n', encoding="utf-8")
    (tmp_path / "q.jsonl").write_text('{"_id": "q1", "text": "q"}\n', encoding="utf-8")
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    header = RETRIEVAL if kind == "retrieval" else f"name: t\nkind: {kind}\n"
    scorer = AngleScorer({"q": 0, "x": 10, "y": 20, "z": 30, "w": 40, "n": 50, "a": 1, "b": 2})
    with pytest.raises(DataError, match=message) as err:
        score_task_card(scorer, card(tmp_path, header + extra))
    assert "\n" not in str(err.value)


def test_unknown_ids_can_be_left_out_and_are_counted(tmp_path):
    (tmp_path / "c.jsonl").write_text('{"_id": "d1", "text": "x"}\n{"_id": "d2", "text": "y"}\n', encoding="utf-8")
    (tmp_path / "q.jsonl").write_text('{"_id": "q1", "text": "q"}\n', encoding="utf-8")
    (tmp_path / "r.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td9\t1\nq7\td2\t1\n", encoding="utf-8")
    result = score_task_card(AngleScorer({"q": 0, "x": 10, "y": 20}), card(tmp_path, RETRIEVAL + "unknown_ids: skip\n"))
    assert result.extra["judgements_with_unknown_ids"] == 2
    assert result.main == pytest.approx(100.0)  # d1, its one known relevant document, ranks first


def test_a_card_puts_its_query_and_document_prompts_before_the_texts(tmp_path):
    """The card's prompts: q1 is nearest d1 unprompted, but "query: q1" nearest "passage: d2"; a
    reranking card's query and candidates are prompted alike; a prompt on a pair card is one line."""
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "text": d}) + "\n" for d in ("d1", "d2")), encoding="utf-8"
    )
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "q1"}) + "\n", encoding="utf-8")
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\n", encoding="utf-8")
    angles = {"q1": 0, "d1": 10, "d2": 60, "query: q1": 100, "passage: d1": 170, "passage: d2": 110}
    text = "name: r\nkind: retrieval\ncorpus: corpus.jsonl\nqrels: qrels.tsv\nqueries: queries.jsonl\nk: 2\n"
    plain = score_task_card(AngleScorer(angles), card(tmp_path, text))
    assert plain.scores["mrr@10"] == pytest.approx(50.0) and plain.extra["prompts"] == {"query": "", "document": ""}
    prompts = "query_prompt: 'query: '\ndocument_prompt: 'passage: '\n"
    result = score_task_card(AngleScorer(angles), card(tmp_path, text + prompts))
    assert result.scores["mrr@10"] == pytest.approx(100.0)
    assert result.extra["prompts"] == {"query": "query: ", "document": "passage: "}
    (tmp_path / "rerank.jsonl").write_text(json.dumps({"query": "q1", "positive": ["d2"], "negative": ["d1"]}) + "\n")
    reranked = score_task_card(
        AngleScorer(angles), card(tmp_path, "name: rr\nkind: reranking\nfile: rerank.jsonl\n" + prompts)
    )
    assert reranked.scores["mrr@10"] == pytest.approx(100.0)  # unprompted, d1 would rank first: 50
    with pytest.raises(DataError, match="query_prompt: read for kinds retrieval and reranking only"):
        card(tmp_path, "name: p\nkind: scored-pairs\nfile: qrels.tsv\nquery_prompt: 'q: '\n")


def test_the_models_own_prompts_are_used_unless_the_card_says_otherwise(tiny_backbone, tmp_path):
    """A model with e5's prompts (query, passage) encodes a card's queries and documents with them; a
    card's '' turns them off; a default prompt or pooling without the prompt's tokens is one line."""
    from sentlab.encoders import build_encoder
    from sentlab.errors import ConfigError
    from sentlab.evaluation.scoring import CosineScorer

    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "text": t}) + "\n" for d, t in (("d1", "the dog"), ("d2", "a cat"))),
        encoding="utf-8",
    )
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "the cat"}) + "\n", encoding="utf-8")
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\n", encoding="utf-8")
    text = "name: r\nkind: retrieval\ncorpus: corpus.jsonl\nqrels: qrels.tsv\nqueries: queries.jsonl\n"
    model = build_encoder(str(tiny_backbone), "mean")
    model.prompts = {"query": "query: ", "passage": "passage: "}
    seen = []

    class Spy(CosineScorer):
        def encode(self, sentences):
            seen.extend(sentences)
            return super().encode(sentences)

    result = score_task_card(Spy(model), card(tmp_path, text))
    assert sorted(seen) == ["passage: a cat", "passage: the dog", "query: the cat"]
    assert result.extra["prompts"] == {"query": "query: ", "document": "passage: "}
    seen.clear()
    score_task_card(Spy(model), card(tmp_path, text + "query_prompt: ''\n"))
    assert sorted(seen) == ["passage: a cat", "passage: the dog", "the cat"]
    # the stored form (--dims, --embedding-precision) encodes with the same prompts
    from sentlab.evaluation.quantized import QuantizedEmbeddings
    from sentlab.evaluation.scoring import EmbeddingCache

    texts = []

    class SpyCache(EmbeddingCache):
        def encode(self, sentences, **kwargs):
            texts.extend(sentences)
            return super().encode(sentences, **kwargs)

    stored = score_task_card(CosineScorer(QuantizedEmbeddings(SpyCache(model), 16, "float32")), card(tmp_path, text))
    assert sorted(texts) == ["passage: a cat", "passage: the dog", "query: the cat"]
    assert stored.extra["prompts"] == {"query": "query: ", "document": "passage: "}
    model.default_prompt_name = "query"
    with pytest.raises(ConfigError, match="task card r: the model puts its default prompt 'query' before every text"):
        score_task_card(Spy(model), card(tmp_path, text))
    model.default_prompt_name = None
    model[1].include_prompt = False
    with pytest.raises(ConfigError, match="leaves the prompt's tokens out"):
        score_task_card(Spy(model), card(tmp_path, text))


def _hub_stand_in(folder, files: dict[str, list[dict]]):
    """A dataset repository's files as datasets.load_dataset reads them by id: SUBSET/SPLIT.jsonl,
    the subsets (configs) declared in the README's front matter, as MTEB's repositories declare them."""
    configs = {}
    for name, rows in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        configs.setdefault(path.parent.name, []).append(f"  - split: {path.stem}\n    path: {name}\n")
    front = "".join(f"- config_name: {c}\n  data_files:\n{''.join(s)}" for c, s in configs.items())
    (folder / "README.md").write_text(f"---\nconfigs:\n{front}---\n", encoding="utf-8")
    return f"hf:{folder}"


def test_a_cards_identity_follows_its_settings_and_its_data(tmp_path, corpus_file):
    """What adapt and compare key a card's scores by: the same card read twice is the same card; another
    score in its file, or another setting, is another card."""
    from tests.conftest import write_scored_pairs_card

    path = write_scored_pairs_card(tmp_path, corpus_file, "mine")
    first = load_task_card(path).identity()
    assert load_task_card(path).identity() == first
    tsv = path.with_suffix(".tsv")
    tsv.write_text(tsv.read_text().replace("\t4\n", "\t3\n", 1))
    assert load_task_card(path).identity() != first
    changed = load_task_card(path).identity()
    path.write_text(path.read_text().replace("name: mine", "name: theirs"))
    assert load_task_card(path).identity() != changed


def test_every_kind_reads_a_datasets_source_as_it_reads_the_file(tmp_path):
    """The same rows as files and as datasets sources (a save_to_disk folder, an .arrow or .parquet file, a hub
    dataset's subsets and splits, here a local stand-in) score the same, for every kind."""
    from datasets import Dataset, DatasetDict

    scorer = AngleScorer({"q": 0, "r": 90, "x": 10, "y": 20, "z": 30, "w": 40, "d1": 10, "d2": 20, "d3": 50})
    pairs = {"a": ["q", "q", "q", "q"], "b": ["x", "y", "z", "w"], "label": [1, 0, 1, 0], "score": [4.0, 1, 3, 2]}
    (tmp_path / "pairs.tsv").write_text(
        "a\tb\tlabel\tscore\n" + "".join(f"q\t{b}\t{la}\t{sc}\n" for b, la, sc in zip(*list(pairs.values())[1:]))
    )
    flipped = {**pairs, "label": [1 - v for v in pairs["label"]], "score": pairs["score"][::-1]}
    DatasetDict({"train": Dataset.from_dict(flipped), "dev": Dataset.from_dict(pairs)}).save_to_disk(
        str(tmp_path / "pairs")
    )  # the file's rows are dev's: a split read wrong scores otherwise
    for kind, columns in (("labelled-pairs", "[a, b, label]"), ("scored-pairs", "[a, b, score]")):
        text = f"name: t\nkind: {kind}\ncolumns: {columns}\n"
        as_file = score_task_card(scorer, card(tmp_path, text + "file: pairs.tsv\n"))
        as_folder = score_task_card(scorer, card(tmp_path, text + "file: {source: pairs, split: dev}\n"))
        arrow = next((tmp_path / "pairs" / "dev").glob("*.arrow")).relative_to(tmp_path)
        as_arrow = score_task_card(scorer, card(tmp_path, text + f"file: {arrow}\n"))
        Dataset.from_dict(pairs).to_parquet(str(tmp_path / "pairs.parquet"))  # as hub datasets are stored
        as_parquet = score_task_card(scorer, card(tmp_path, text + "file: pairs.parquet\n"))
        assert as_folder.scores == as_file.scores == as_arrow.scores == as_parquet.scores and as_folder.n == 4
        train = score_task_card(scorer, card(tmp_path, text + "file: pairs\n"))  # a string: its train split
        assert train.scores != as_file.scores
    corpus = [{"_id": d, "title": "", "text": d} for d in ("d1", "d2", "d3")]
    queries = [{"_id": "q1", "text": "q"}, {"_id": "q2", "text": "r"}]
    qrels = [{"query-id": "q1", "corpus-id": "d2", "score": 1}, {"query-id": "q1", "corpus-id": "d3", "score": 3}]
    for name, rows in (("corpus.jsonl", corpus), ("queries.jsonl", queries)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\nq1\td3\t3\n")
    hub = _hub_stand_in(
        tmp_path / "mteb-like",
        {"corpus/corpus.jsonl": corpus, "queries/queries.jsonl": queries, "default/test.jsonl": qrels},
    )
    files = score_task_card(
        scorer,
        card(tmp_path, "name: r\nkind: retrieval\ncorpus: corpus.jsonl\nqueries: queries.jsonl\nqrels: qrels.tsv\n"),
    )
    text = (
        f"name: r\nkind: retrieval\ncorpus: {{source: '{hub}', subset: corpus, split: corpus}}\n"
        f"queries: {{source: '{hub}', subset: queries, split: queries}}\n"
        f"qrels: {{source: '{hub}', subset: default, split: test}}\n"
    )
    held = score_task_card(scorer, card(tmp_path, text))
    assert held.scores == files.scores and held.n == 1 and held.extra["corpus"] == 3
    assert held.scores["ndcg@10"] < 100  # d3, judged 3, ranks below d2: the grades are kept
    reranking = [{"query": "q", "positive": ["x", "z"], "negative": ["y", "w"]}]
    (tmp_path / "rr.jsonl").write_text(json.dumps(reranking[0]) + "\n")
    Dataset.from_list(reranking).save_to_disk(str(tmp_path / "rr"))
    text = "name: rr\nkind: reranking\n"
    assert (
        score_task_card(scorer, card(tmp_path, text + "file: rr\n")).scores
        == score_task_card(scorer, card(tmp_path, text + "file: rr.jsonl\n")).scores
    )


@pytest.mark.parametrize(
    "value, message",
    [
        ("{source: pairs, split: tset}", r"task card t: file: .*pairs: no split 'tset' \(did you mean test\?\)"),
        ("{source: pairs.tsv, split: test}", r"file: .*pairs.tsv is not a datasets source"),
        ("pairs", r"missing column 'label'"),
    ],
)
def test_a_bad_datasets_source_on_a_card_is_one_line(tmp_path, value, message):
    from datasets import Dataset, DatasetDict

    (tmp_path / "pairs.tsv").write_text("a\tb\tlabel\nq\tx\t1\n")
    DatasetDict(
        {"train": Dataset.from_dict({"a": ["q"], "b": ["x"]}), "test": Dataset.from_dict({"a": ["q"]})}
    ).save_to_disk(str(tmp_path / "pairs"))
    with pytest.raises(DataError, match=message) as err:
        score_task_card(
            AngleScorer({"q": 0, "x": 1}),
            card(tmp_path, f"name: t\nkind: labelled-pairs\nfile: {value}\ncolumns: [a, b, label]\n"),
        )
    assert "\n" not in str(err.value)
