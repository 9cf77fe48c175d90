import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from sentlab.cli import main
from sentlab.encoders import build_encoder
from tests.conftest import the_error


@pytest.fixture
def tiny_st_model(tiny_backbone, tmp_path):
    path = tmp_path / "tiny-st"
    build_encoder(str(tiny_backbone), "mean").save(str(path))
    return path


def test_encode_writes_the_same_embeddings_as_sentence_transformers(tiny_st_model, corpus_file, tmp_path, capsys):
    out = tmp_path / "emb.npy"
    assert (
        main(
            [
                "encode",
                "--model",
                str(tiny_st_model),
                "--input",
                str(corpus_file),
                "--output",
                str(out),
                "--quiet",
                "--batch-size",
                "32",
            ]
        )
        == 0
    )
    sentences = corpus_file.read_text().splitlines()
    expected = SentenceTransformer(str(tiny_st_model)).encode(sentences, batch_size=32)
    # the same model, but sentlab batches by token length and sentence-transformers by characters:
    # other batch shapes, so other BLAS blockings and summation orders; padding is masked, so only
    # float32 rounding differs (values are O(1), ulp ~1e-7; 2 layers of sums of 32-64 terms: < 1e-5)
    np.testing.assert_allclose(np.load(out), expected, atol=1e-5)


def test_similarity_prints_a_cosine(tiny_st_model, capsys):
    assert main(["similarity", "--model", str(tiny_st_model), "a man plays", "a man plays"]) == 0
    out = capsys.readouterr().out
    assert float(out.split()[0]) == pytest.approx(1.0, abs=1e-4) and "cosine similarity of the two sentences" in out


def test_eval_writes_the_documented_json_shape(tiny_st_model, data_dir, tmp_path, capsys):
    out = tmp_path / "results.json"
    assert (
        main(
            ["eval", "--model", str(tiny_st_model), "--tasks", "sts", "--output", str(out), "--data-dir", str(data_dir)]
        )
        == 0
    )
    import json

    results = json.loads(out.read_text())
    assert set(results) >= {"model", "tasks", "summary"}
    for task in ("STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R"):
        assert isinstance(results["tasks"][task]["spearman"], float)
    assert set(results["tasks"]["STS12"]["subsets"]) == {
        "MSRpar",
        "MSRvid",
        "SMTeuroparl",
        "surprise.OnWN",
        "surprise.SMTnews",
    }
    headline = [
        results["tasks"][t]["spearman"] for t in ("STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R")
    ]
    assert results["summary"]["sts_avg"] == pytest.approx(np.mean(headline))
    assert "STS12" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["similarity", "--model", "/no/such/model", "a", "b"], "model folder not found"),
        (["eval", "--model", "minilm", "--tasks", "stss"], "unknown task family 'stss'"),
        (["train", "/no/such/config.yaml"], "no such config file and no preset of that name"),
        (["report", "/no/such/results.json"], "results.json: file not found"),
        (["encode", "--model", "minilm", "--input", "/no/such.txt", "--output", "x.npy"], "file not found"),
    ],
)
def test_bad_input_exits_non_zero_with_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = the_error(capsys.readouterr().err)
    assert err.startswith("sentlab: error:") and message in err


def test_index_build_pack_and_rank_similarity(tiny_st_model, corpus_file, tmp_path, capsys):
    from scipy.stats import spearmanr

    from sentlab.rank.index import CorpusIndex
    from sentlab.rank.model import RankEncoder

    index_dir = tmp_path / "idx"
    assert (
        main(
            [
                "index",
                "build",
                "--model",
                str(tiny_st_model),
                "--corpus",
                str(corpus_file),
                "--limit",
                "50",
                "--output",
                str(index_dir),
                "--quiet",
            ]
        )
        == 0
    )
    index = CorpusIndex.load(index_dir)
    assert len(index) == 50 and index.extra["corpus_file"] == str(corpus_file)
    capsys.readouterr()
    pair = ["a man plays the guitar", "a woman plays the piano"]
    cosine = ["similarity", "--model", str(tiny_st_model), *pair]
    assert main(cosine) == 0
    cos = float(capsys.readouterr().out.split()[0])
    assert main([*cosine, "--index", str(index_dir), "--lambda-inf", "0"]) == 0
    assert float(capsys.readouterr().out.split()[0]) == cos
    assert main([*cosine, "--index", str(index_dir), "--lambda-inf", "1"]) == 0
    v = SentenceTransformer(str(tiny_st_model)).encode(pair, normalize_embeddings=True)
    expected = spearmanr(index.vectors @ v[0], index.vectors @ v[1])[0]
    assert float(capsys.readouterr().out.split()[0]) == pytest.approx(expected, abs=1e-4)
    packed = tmp_path / "packed"
    assert (
        main(
            [
                "index",
                "pack",
                "--model",
                str(tiny_st_model),
                "--index",
                str(index_dir),
                "--lambda-inf",
                "1",
                "--output",
                str(packed),
            ]
        )
        == 0
    )
    assert RankEncoder.load(packed).lambda_inf == 1.0
    capsys.readouterr()
    assert main(["similarity", "--model", str(packed), *pair]) == 0  # the folder's own lambda_inf
    assert float(capsys.readouterr().out.split()[0]) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--index", "/no/such/index"], "not a sentlab index"),
        (["--lambda-inf", "0.5"], "--lambda-inf needs --index"),
    ],
)
def test_rank_options_bad_input(tiny_st_model, extra, message, capsys):
    assert main(["similarity", "--model", str(tiny_st_model), "a dog", "a cat", *extra]) == 2
    assert message in the_error(capsys.readouterr().err)


def test_index_of_another_model_is_refused_by_eval(
    tiny_st_model, tiny_backbone_no_dropout, corpus_file, tmp_path, capsys
):
    other = tmp_path / "other"
    build_encoder(str(tiny_backbone_no_dropout), "cls").save(str(other))
    assert (
        main(
            [
                "index",
                "build",
                "--model",
                str(other),
                "--corpus",
                str(corpus_file),
                "--output",
                str(tmp_path / "idx"),
                "--quiet",
            ]
        )
        == 0
    )
    assert main(["eval", "--model", str(tiny_st_model), "--index", str(tmp_path / "idx")]) == 2
    assert "not the encoder in use" in capsys.readouterr().err


def test_eval_ranking_tasks_on_real_data(tiny_st_model, data_dir, tmp_path):
    import json

    from sentlab.evaluation.uncertainty import headline

    out = tmp_path / "ranking.json"
    assert main(["eval", "--model", str(tiny_st_model), "--tasks", "ranking", "--output", str(out), "--items"]) == 0
    results = json.loads(out.read_text())
    assert {f"{t}-ranking" for t in ("STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R")} == set(
        results["tasks"]
    )
    assert all(r["n_samples"] > 0 for r in results["tasks"].values())
    for measure in ("kcc", "ndcg"):  # each average is the mean of the seven tasks' figures
        mean = sum(r[measure] for r in results["tasks"].values()) / 7
        assert results["summary"][f"ranking_{measure}_avg"] == pytest.approx(mean, abs=1e-9)
    # --items: each sample's values are kept, and give the headline back
    assert all(headline(r["extra"]["items"]) == pytest.approx(r["kcc"]) for r in results["tasks"].values())


def test_eval_all_on_the_data_present_then_report(tiny_st_model, tmp_path, capsys):
    import json

    from tests.fake_data import write_cqadupstack, write_evalrank, write_transfer, write_twitterpara

    data = tmp_path / "data"
    write_transfer(data, n=10)
    write_cqadupstack(data)
    write_twitterpara(data)
    write_evalrank(data)
    out = tmp_path / "results.json"
    assert (
        main(
            [
                "eval",
                "--model",
                str(tiny_st_model),
                "--tasks",
                "all",
                "--data-dir",
                str(data),
                "--kfold",
                "2",
                "--features",
                "cls-last1",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "skipped STS12: missing" in printed and "skipped AskUbuntu: missing" in printed
    results = json.loads(out.read_text())
    assert set(results["tasks"]) == {
        "MR",
        "CR",
        "SUBJ",
        "MPQA",
        "SST2",
        "TREC",
        "MRPC",
        "CQADupStack",
        "TwitterPara",
        "EvalRank",
    }
    assert results["settings"]["features"] == "cls-last1" and results["settings"]["kfold"] == 2
    assert set(results["settings"]["seconds"]) == {"transfer", "useb", "evalrank"}
    transfer = [results["tasks"][t]["scores"]["accuracy"] for t in ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")]
    assert results["summary"]["transfer_avg"] == pytest.approx(sum(transfer) / 7, abs=1e-9)

    assert main(["report", str(out), "--output", str(tmp_path / "report")]) == 0
    printed = capsys.readouterr().out
    assert "## Transfer (accuracy)" in printed and "## USEB" in printed and "## EvalRank" in printed
    assert (tmp_path / "report" / "report.md").read_text() in printed
    assert sorted(p.name for p in (tmp_path / "report").glob("*.png")) == ["evalrank.png", "transfer.png", "useb.png"]


def test_eval_transfer_rejects_unknown_features(tiny_st_model, tmp_path, capsys):
    from tests.fake_data import write_transfer

    write_transfer(tmp_path, n=4)
    assert (
        main(
            [
                "eval",
                "--model",
                str(tiny_st_model),
                "--tasks",
                "transfer",
                "--data-dir",
                str(tmp_path),
                "--features",
                "cls-avg",
            ]
        )
        == 2
    )
    assert "unknown features 'cls-avg'" in capsys.readouterr().err


@pytest.fixture
def tiny_rse_folder(tiny_st_model, tmp_path):
    """A tiny model with a relation table beside it, as an RSE run saves it."""
    import shutil

    from sentlab.evaluation.relational import RelationTable

    folder = tmp_path / "rse"
    shutil.copytree(tiny_st_model, folder)
    rng = np.random.default_rng(0)
    RelationTable(
        ["entailment", "duplicate_question"],
        rng.normal(size=(2, 32)).astype(np.float32),
        {"entailment": 1.0, "duplicate_question": 0.5},
    ).save(folder)
    return folder


def test_similarity_of_an_rse_model_prints_every_relation_and_the_mix(tiny_rse_folder, capsys):
    from sentlab.evaluation.relational import RelationalScorer, RelationTable

    pair = ["a man plays the guitar", "a woman plays the piano"]
    assert main(["similarity", "--model", str(tiny_rse_folder), *pair]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split()[0] for line in lines] == ["entailment", "duplicate_question", "mix"]
    scorer = RelationalScorer(SentenceTransformer(str(tiny_rse_folder)), RelationTable.load(tiny_rse_folder))
    expected = scorer.relation_scores(pair[:1], pair[1:])[0]
    printed = [float(line.split()[1]) for line in lines]
    np.testing.assert_allclose(printed[:2], expected, atol=6e-5)  # printed to 4 decimals
    assert printed[2] == pytest.approx(2 / 3 * expected[0] + 1 / 3 * expected[1], abs=1e-4)
    assert main(["similarity", "--model", str(tiny_rse_folder), *pair, "--relation", "none"]) == 0
    v = SentenceTransformer(str(tiny_rse_folder)).encode(pair, normalize_embeddings=True)
    assert float(capsys.readouterr().out.split()[0]) == pytest.approx(float(v[0] @ v[1]), abs=1e-4)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--relation", "paraphrase"], "unknown relation(s) paraphrase"),
        (["--relation-weights", "entailment"], "expected name=weight"),
        (["--relation", "entailment", "--relation-weights", "entailment=1"], "not both"),
    ],
)
def test_relation_options_bad_input(tiny_rse_folder, extra, message, capsys):
    assert main(["similarity", "--model", str(tiny_rse_folder), "a dog", "a cat", *extra]) == 2
    assert message in the_error(capsys.readouterr().err)


def test_relation_options_need_an_rse_folder(tiny_st_model, capsys):
    assert main(["eval", "--model", str(tiny_st_model), "--relation", "entailment"]) == 2
    assert "need an RSE model folder" in capsys.readouterr().err


def test_eval_scores_sts_relationally_and_plot_relations(tiny_rse_folder, data_dir, tmp_path, capsys):
    import json

    out = tmp_path / "r.json"
    assert (
        main(
            [
                "eval",
                "--model",
                str(tiny_rse_folder),
                "--tasks",
                "sts",
                "--relation",
                "duplicate_question",
                "--output",
                str(out),
                "--data-dir",
                str(data_dir),
                "--quiet",
            ]
        )
        == 0
    )
    results = json.loads(out.read_text())
    assert results["settings"]["relation_weights"] == {"entailment": 0.0, "duplicate_question": 1.0}
    assert "RSE duplicate_question=1" in results["model"]
    assert main(["plot", "relations", "--model", str(tiny_rse_folder), "--output", str(tmp_path / "fig")]) == 0
    matrix = json.loads((tmp_path / "fig" / "relation_similarity.json").read_text())["cosine"]
    assert matrix[0][0] == pytest.approx(1.0) and (tmp_path / "fig" / "relation_similarity.png").is_file()


def test_link_prediction_command(tiny_rse_folder, tmp_path, capsys):
    import json

    from sentlab.evaluation.link_prediction import link_prediction
    from sentlab.evaluation.relational import RelationTable
    from sentlab.methods.rse import read_sources_file

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(
        "".join(f"a man plays number {i}\ta person plays {i} songs\n" for i in range(12)), encoding="utf-8"
    )
    sources = tmp_path / "heldout.yaml"
    sources.write_text(f"sources:\n  - {{relation: entailment, path: {pairs}, format: paranmt}}\n", encoding="utf-8")
    out = tmp_path / "lp.json"
    assert (
        main(
            [
                "link-prediction",
                "--model",
                str(tiny_rse_folder),
                "--sources",
                str(sources),
                "--cap",
                "10",
                "--output",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    metrics = json.loads(out.read_text())["metrics"]
    assert set(metrics) == {"entailment", "all"} and metrics["all"]["n"] == 10
    triples = read_sources_file(sources, 10, seed=0)
    model = SentenceTransformer(str(tiny_rse_folder))
    expected = link_prediction(lambda t: model.encode(list(t)), RelationTable.load(tiny_rse_folder), triples)
    # sentlab batches by length, sentence-transformers by characters: float32 rounding only; the
    # 10 tails of random-model embeddings are far apart relative to that, so ranks agree exactly
    assert metrics["all"]["mrr"] == pytest.approx(expected["all"]["mrr"])
    assert (
        main(["link-prediction", "--model", str(tiny_rse_folder), "--sources", str(sources), "--zero-relations"]) == 0
    )
    assert "relation vectors 0" in capsys.readouterr().out
    sources.write_text("sources:\n  - {relation: entailment, format: paranmt}\n", encoding="utf-8")
    assert main(["link-prediction", "--model", str(tiny_rse_folder), "--sources", str(sources)]) == 2
    assert "sources[0].path" in the_error(capsys.readouterr().err)
    sources.write_text("sources: [\n", encoding="utf-8")  # malformed YAML: one line, not a traceback
    assert main(["link-prediction", "--model", str(tiny_rse_folder), "--sources", str(sources)]) == 2
    assert "not valid YAML" in the_error(capsys.readouterr().err)


def test_eval_task_card_only_runs_the_card(tiny_st_model, tmp_path, capsys):
    import json

    words = ["guitar", "dog", "park", "book", "car", "water", "sky", "food", "ball", "tree"]
    (tmp_path / "pairs.tsv").write_text(
        "a\tb\tlabel\n"
        + "".join(
            f"the {w}\tthe {w}\t1\nthe {w}\ta {words[(i + 3) % 10]} runs fast\t0\n" for i, w in enumerate(words[:6])
        ),
        encoding="utf-8",
    )
    (tmp_path / "card.yaml").write_text(
        "name: my-pairs\nkind: labelled-pairs\nfile: pairs.tsv\ncolumns: [a, b, label]\n", encoding="utf-8"
    )
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "eval",
                "--model",
                str(tiny_st_model),
                "--task-card",
                str(tmp_path / "card.yaml"),
                "--output",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    results = json.loads(out.read_text())
    assert list(results["tasks"]) == ["my-pairs"]  # no built-in family unless --tasks names one
    assert results["tasks"]["my-pairs"]["scores"]["ap"] == pytest.approx(100.0)  # identical texts score 1
    assert results["tasks"]["my-pairs"]["extra"]["ci95"]["ap"] == pytest.approx([100.0, 100.0])
    assert "my-pairs: ap 100.00, 95% CI [100.00, 100.00] (bootstrap over its 12 items)" in capsys.readouterr().out


def test_version_and_help_import_nothing_heavy():
    """`sentlab --version` / `--help` answer without importing torch, transformers or
    sentence-transformers (each command imports its own modules)."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom sentlab.cli import main\nfor argv in (['--version'], ['--help'], ['train', '--help']):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
