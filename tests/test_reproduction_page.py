"""``ragsweep report reproduction`` over real results files: the collector's comparison.json of
small sweeps and hand-written bench runs (tests/reproduction_fixtures.py says what each number is).

Checked: each table puts ours beside the methodology's with the difference; a difference over
0.01 names its explanation or says unexplained; a table with no results file says what to run
in one line; the agreement tables equal ``ragsweep agreement`` over the arms' own files; the page
is byte-identical across runs and lists every file it read with its sha256; a malformed results
file is one line naming it, exit 4, and nothing is written.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import EXIT_INPUT, EXIT_USAGE
from harness.reproduction.methodology import load_tables
from harness.sweep.agreement import analyse, results_from_store
from harness.sweep.catalogue import CATALOGUE
from harness.sweep.storage import LocalFolderStore
from tests.reproduction_fixtures import publish_sweep, write_bench_run, write_self_report


@pytest.fixture(scope="module")
def var(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("var")
    publish_sweep(root, "all-two", ("fusion", "budget", "pool", "diversity"))
    publish_sweep(root, "fusion-one", ("fusion",), corpora=("synthetic",))
    write_bench_run(root / "bench" / "scope-corpus", "corpus", 0.1052)
    write_bench_run(root / "bench" / "scope-gold-files", "gold-files", 0.3296)
    write_self_report(root / "bench")
    return root


def generate(root: Path, out: Path, *extra: str) -> int:
    return main(["report", "reproduction", "--sweeps", str(root), "--bench-dir", str(root / "bench"),
                 "--out", str(out), *extra])


@pytest.fixture(scope="module")
def page(var: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("docs") / "reproduction.md"
    assert generate(var, out) == 0
    return out.read_text(encoding="utf-8")


def section(page: str, title: str) -> str:
    start = page.index(f"### {title}\n")
    ends = [e for e in (page.find("\n### ", start + 1), page.find("\n## ", start + 1)) if e >= 0]
    return page[start:min(ends)] if ends else page[start:]


def row(text: str, key: str) -> list[str]:
    line = next(x for x in text.splitlines() if x.startswith(f"| {key} |") or x.startswith(f"| {key}: "))
    return [c.strip() for c in line.strip("|").split(" | ")]


def test_fusion_rows_are_ours_beside_theirs_with_the_difference(page: str) -> None:
    table = section(page, "fusion family, all class nDCG@10")
    assert "sweep all-two, family fusion" in table  # two corpora before one
    assert "also present, not used: `" in table and "fusion-one/comparison.json" in table
    control = row(table, "rrf-30-default")
    assert control[1] == "0.0983 / 0.0983 (+0.0000)" and control[4] == "0.2952 / 0.2952 (+0.0000)"
    rrf60 = row(table, "rrf-60")
    # 0.0983 - 0.0003 = 0.0980 against the printed 0.0979; Δ% = -0.0003 / 0.0983 = -0.31%
    assert rrf60[1:4] == ["0.0980 / 0.0979 (+0.0001)", "-0.0003 / -0.0003 (+0.0000)", "-0.3% / -0.4% (+0.1%)"]
    assert rrf60[7:] == ["split / split", "—"]


def test_a_difference_over_the_threshold_is_bold_and_explained(page: str) -> None:
    table = section(page, "fusion family, all class nDCG@10")
    geom = row(table, "norm-minmax-geom")
    # synthetic 0.2952 - 0.0100 = 0.2852 against the collapsed 0.0968
    assert geom[4] == "**0.2852 / 0.0968 (+0.1884)**"
    assert geom[8] == "[collapse-not-reproduced]"
    assert "- [collapse-not-reproduced] Engine semantics:" in table
    per_class = section(page, "fusion family, nDCG@10 per class")
    # every qmsum row is 0.0983 here; the printed summarize control is 0.0821: +0.0162 > 0.01
    assert row(per_class, "rrf-30-default")[5] == "**0.0983 / 0.0821 (+0.0162)**"
    assert "[qmsum-index-contents]" in row(per_class, "rrf-30-default")[-1]
    assert "(ours: index_documents 90, index_digest_documents 10, index_files 8, backend embedded)." in per_class


def test_a_difference_with_no_sentence_says_unexplained(page: str) -> None:
    composition = section(page, "QMSum composition")
    # 4 files against 232: no entry of explanations.json covers the files row
    assert row(composition, "files") == ["files", "**4 / 232 (-228)**", "**unexplained** (value)"]
    assert row(composition, "files_with_real_timings")[-1] == "[composition-timings]"
    assert row(composition, "files_with_real_timings[Academic]")[1] == "not measured / 59"
    assert ("- not measured: real AMI/ICSI word timings are outside the project: the AMI and ICSI corpora cannot be "
            "fetched here, so no QMSum meeting is aligned to real timings and none is counted per domain (2 cells)"
            ) in composition
    assert "unexplained)" in page.split("\n\n")[3]  # the summary counts them


def test_the_bm25_domain_table_comes_from_the_self_report(page: str) -> None:
    table = section(page, "QMSum: BM25 gold-meeting ranks per domain")
    assert "bench/qmsum-bm25.json` (bm25s 0.2, lucene, k1=1.2, b=0.75; pooled: 10 meetings, 2 queries)" in table
    assert row(table, "Product")[1:4] == ["0.124 / 0.124 (+0.000)", "22 / 22 (+0)", "49.2 / 49.2 (+0.0)"]
    # 3 meetings in the fixture's Product group: 3 others against 136, a count no sentence covers
    assert row(table, "Product")[4:] == ["**3 / 136 (-133)**", "**unexplained** (other meetings)"]
    assert row(table, "Academic")[1] == "**0.300 / 0.234 (+0.066)**"
    assert row(table, "Academic")[-1] == "[bm25-scorer]"


def test_scope_tables_come_from_the_bench_runs(page: str) -> None:
    corpus = section(page, "stage 1, corpus scope (QMSum)")
    assert "bench/scope-corpus/metrics.json` (stage retrieve, scope corpus, size 48, backend embedded)" in corpus
    assert row(corpus, "all")[3] == "0.1052 / 0.1052 (+0.0000)"
    gold = section(page, "stage 1, gold-files scope (QMSum)")
    assert row(gold, "all")[3] == "0.3296 / 0.3296 (+0.0000)"
    assert row(gold, "lookup")[1] == "**2 / 1172 (-1170)**"
    assert row(gold, "lookup")[-1] == "[stage1-classifier] [stage1-index]"
    # the all row's n is the whole query set, which no class rule moves: 4 against 1576 is unexplained
    assert row(gold, "all")[-1] == "[stage1-index] **unexplained** (n)"


def test_agreement_matches_the_methodology_where_the_deltas_do(page: str) -> None:
    signs = section(page, "sign agreement")
    # the geometric/harmonic arms still lose on both corpora: 10 agree, 6 disagree, 5 inert, as printed
    assert row(signs, "all")[1:4] == ["10 / 10 (+0)", "6 / 6 (+0)", "5 / 5 (+0)"]
    assert row(signs, "all")[5] == "62.5% / 62.5% (+0.0%)"
    coefficients = section(page, "agreement coefficients, all class")
    assert row(coefficients, "pool")[1:6] == ["4 / 4 (+0)", "+0.667 / +0.667 (+0.000)", "0.333 / 0.333 (+0.000)",
                                             "+0.800 / +0.800 (+0.000)", "0.200 / 0.200 (+0.000)"]
    arms = section(page, "per-arm Δ against the family control, all class nDCG@10")
    assert row(arms, "norm-minmax-geom")[2] == "**-0.0100 / -0.1984 (+0.1884)**"
    assert row(arms, "norm-minmax-geom")[-1] == "[collapse-not-reproduced]"


def test_agreement_is_the_sweep_stage_analysis_of_the_arms_own_files(var: Path, page: str) -> None:
    families = [CATALOGUE.family(n) for n in ("fusion", "budget", "pool")]
    results = [r for f in families
               for r in results_from_store(LocalFolderStore(var), "all-two", CATALOGUE.model_copy(
                   update={"families": (f,)}))]
    doc = analyse(results, families, corpora=["qmsum", "synthetic"])
    pooled = next(s for s in doc["sets"] if s["set"] == "pooled")["coefficients"]
    shown = row(section(page, "agreement coefficients, all class"), "pooled")
    assert shown[2].strip("*").startswith(f"{pooled['kendall_tau_b']:+.3f} / +0.301 ")
    assert shown[4].strip("*").startswith(f"{pooled['spearman_rho']:+.3f} / +0.378 ")


def test_absent_results_are_one_line_naming_what_to_run(tmp_path: Path) -> None:
    out = tmp_path / "page.md"
    assert generate(tmp_path / "empty", out) == 0
    page = out.read_text(encoding="utf-8")
    tables = len(load_tables().tables)
    # every table but the metric-library one, which is computed from hand-built inputs, not read from a file
    assert f"{tables - 1} of {tables} tables not measured" in page
    assert "Ours: computed live" in section(page, "metric libraries on the same input, nDCG@10")
    for command in ("make sweep ARMS=fusion", "make sweep ARMS=budget", "make sweep ARMS=pool",
                    "make sweep ARMS=diversity", "make scopes", "make sweep ARMS=all", "make ablation",
                    "make sweep ARMS=embedding", "make scopes ablation"):
        assert f"run `{command}" in page
    budget = section(page, "budget family (475-query subset in the methodology)")
    assert budget.strip().splitlines()[-1].startswith("Methodology lines 801–806. not measured: ")


def test_a_single_corpus_sweep_says_which_corpus_is_missing(var: Path, tmp_path: Path) -> None:
    out = tmp_path / "page.md"
    assert generate(var, out, "--sweep-id", "fusion-one") == 0
    table = section(out.read_text(encoding="utf-8"), "fusion family, all class nDCG@10")
    assert "- qmsum was not measured in this sweep: run `make sweep ARMS=fusion` with QMSum fetched" in table
    assert row(table, "rrf-60")[1] == "not measured / 0.0979"
    assert row(table, "rrf-60")[7] == "not measured / split"


def test_the_page_is_deterministic_and_names_its_sources(var: Path, page: str, tmp_path: Path) -> None:
    again = tmp_path / "again.md"
    assert generate(var, again) == 0
    assert again.read_bytes() == page.encode("utf-8")
    sources = page[page.index("## Generated from"):]
    comparison = var / "sweeps" / "all-two" / "comparison.json"
    digest = hashlib.sha256(comparison.read_bytes()).hexdigest()
    assert f"| `{comparison}` | `{digest}` |" in sources
    assert "harness/reproduction/methodology_tables.json" in sources
    assert "harness/reproduction/explanations.json" in sources
    assert "bench/scope-gold-files/metrics.json" in sources


def test_a_malformed_results_file_is_one_line_and_nothing_is_written(
        var: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "var"
    bad = root / "sweeps" / "broken" / "comparison.json"
    bad.parent.mkdir(parents=True)
    doc = json.loads((var / "sweeps" / "fusion-one" / "comparison.json").read_text(encoding="utf-8"))
    del doc["families"][0]["control"]
    bad.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "docs" / "reproduction.md"
    capsys.readouterr()
    assert generate(root, out) == EXIT_INPUT
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("ragsweep: error: ")
    assert f"{bad}: families[0].control is missing" in err
    assert not out.parent.exists() or list(out.parent.iterdir()) == []
    out.parent.mkdir()
    as_it_was = "# Reproduction: the methodology's tables, re-derived by ragsweep\n\nthe page as it was\n"
    out.write_text(as_it_was, encoding="utf-8")  # a page (report reproduction replaces only a page)
    bad.write_text("{", encoding="utf-8")
    assert generate(root, out) == EXIT_INPUT
    assert f"{bad}:1: not JSON" in capsys.readouterr().err
    assert [p.name for p in out.parent.iterdir()] == ["reproduction.md"]  # no temporary left beside it
    assert out.read_text(encoding="utf-8") == as_it_was


def test_a_pinned_sweep_without_comparison_is_a_usage_error(var: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert generate(var, tmp_path / "p.md", "--sweep-id", "nope") == EXIT_USAGE
    assert "--sweep-id: no comparison.json at" in capsys.readouterr().err
    assert not (tmp_path / "p.md").exists()


def test_agreement_over_the_families_measured_names_the_ones_left_out(tmp_path: Path) -> None:
    publish_sweep(tmp_path, "fusion-two", ("fusion",))
    out = tmp_path / "page.md"
    assert generate(tmp_path, out) == 0
    page = out.read_text(encoding="utf-8")
    arms = section(page, "per-arm Δ against the family control, all class nDCG@10")
    assert "- not measured on both corpora, so left out: budget, pool" in arms
    assert row(arms, "rrf-60")[1:4] == ["-0.0003 / -0.0003 (+0.0000)", "+0.0063 / +0.0063 (+0.0000)",
                                        "disagree / disagree"]
    assert row(arms, "pool-12")[1] == "not measured / +0.0128"
    assert "- not measured: its family is not measured on both corpora (36 cells)" in arms
    coefficients = section(page, "agreement coefficients, all class")
    assert row(coefficients, "budget")[1] == "not measured / 8"
    # pooled is the fusion family alone here: the same n and coefficients as its own row
    assert row(coefficients, "pooled")[1] == "**9 / 21 (-12)**"
    assert row(coefficients, "pooled")[-1].startswith("[agreement-arm-count]")
    assert row(coefficients, "pooled")[2].split(" / ")[0].strip("*") == row(coefficients, "fusion")[2].split(
        " / ")[0].strip("*")
