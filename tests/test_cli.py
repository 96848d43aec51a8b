"""The CLI's contract: fast --help with no heavy imports, one-line errors, documented exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import COMMANDS, build_parser, main
from harness.errors import EXIT_INPUT, EXIT_USAGE

HEAVY = ("torch", "sentence_transformers", "transformers", "pytrec_eval", "tantivy", "numpy", "scipy", "bm25s",
         "boto3", "matplotlib", "kubernetes", "opensearchpy", "psycopg", "celery", "onnxruntime", "onnx", "onnxscript")


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys\nfrom harness.cli import build_parser\n"
        "p = build_parser()\n"
        "for a in p._subparsers._group_actions[0].choices.values():\n    a.format_help()\n"
        "print('\\n'.join(sorted(sys.modules)))"
    )
    loaded = set(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                                cwd=Path(__file__).parent.parent).stdout.split())
    assert not {m for m in HEAVY if m in loaded}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_subcommand_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    assert "usage: ragsweep" in capsys.readouterr().out


def test_every_registered_command_is_built() -> None:
    choices = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert set(COMMANDS) <= set(choices)


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    return err


def test_malformed_trec_run_line_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels = tmp_path / "q.trec"
    qrels.write_text("q1 0 d1 1\n")
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 d1 1 0.5 tag\nq1 Q0 d2 two 0.4 tag\n")
    assert main(["score", "--qrels", str(qrels), "--run", str(run)]) == EXIT_INPUT
    assert f"{run}:2: rank 'two' is not an integer" in _one_line_error(capsys)


@pytest.mark.parametrize(("text", "problem"), [
    ("q1 0 d1\n", "1: qrels line needs 4 fields"),
    ("q1 0 d1 1\nq1 0 d2 -1\n", "2: relevance -1 is negative; expected a grade >= 0 (0 = judged not relevant)"),
])
def test_malformed_qrels_line(text: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels = tmp_path / "q.trec"
    qrels.write_text(text)
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 d1 1 0.5 tag\n")
    assert main(["score", "--qrels", str(qrels), "--run", str(run)]) == EXIT_INPUT
    assert f"{qrels}:{problem}" in _one_line_error(capsys)


def test_score_json_keys_measures_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pytrec_eval")
    (tmp_path / "q").write_text("q1 0 a 1\nq2 0 b 1\n")
    (tmp_path / "r").write_text("q1 Q0 a 1 2.0 t\nq1 Q0 z 2 1.0 t\n")
    assert main(["score", "--qrels", str(tmp_path / "q"), "--run", str(tmp_path / "r"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["unanswered"] == ["q2"]
    assert doc["measures"]["MRR"] == pytest.approx(0.5)  # q1: 1.0, q2 unanswered: 0.0
    assert doc["per_query"]["q1"]["nDCG@10"] == pytest.approx(1.0)


def test_bad_fusion_weights_are_refused_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench", "--state", str(tmp_path), "--control-name", "x", "--out", str(tmp_path / "o"),
                 "--fusion", "normalization", "--combination-weights", "0.705,0.295"])
    assert code == EXIT_USAGE
    assert "Unusable --fusion configuration" in _one_line_error(capsys)
    assert not (tmp_path / "o").exists()


def test_library_logging_reaches_stderr_only_while_a_command_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    from harness.cli import logging_to_stderr

    harness_log = logging.getLogger("harness.sweep.executor")
    before = list(logging.getLogger("harness").handlers)
    with logging_to_stderr():
        harness_log.info("sweep s: 2 arms, 0 already complete, 2 to run on 2 workers")
        harness_log.debug("not shown")
        logging.getLogger("harness.retries").warning("put k: attempt 1 failed (Timeout: t); retrying in 1.0s")
    harness_log.info("after the command: not the CLI's to show")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("sweep s: 2 arms, 0 already complete, 2 to run on 2 workers\n"
                            "ragsweep: warning: put k: attempt 1 failed (Timeout: t); retrying in 1.0s\n")
    assert logging.getLogger("harness").handlers == before


def test_every_line_the_cli_logs_is_masked_as_its_error_line_is(capsys: pytest.CaptureFixture[str]) -> None:
    """Whatever logger quotes a URL with a password (the store's name in a progress line, a library's error in
    a warning), stderr shows ``user:***@``: a new message that forgets to mask leaks nothing."""
    import logging

    from harness.cli import logging_to_stderr

    with logging_to_stderr():
        logging.getLogger("harness.sweep.executor").info("store s3://b at http://user:s3cr3t@127.0.0.1:9")
        logging.getLogger("harness.index").warning("GET http://user:s3cr3t@h/x failed; password=s3cr3t")
    assert capsys.readouterr().err == ("store s3://b at http://user:***@127.0.0.1:9\n"
                                       "ragsweep: warning: GET http://user:***@h/x failed; password=***\n")


def test_main_leaves_no_handler_behind(capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    before = list(logging.getLogger("harness").handlers)
    assert main([]) == 2  # no command: help and exit 2, through the same logging setup
    capsys.readouterr()
    assert logging.getLogger("harness").handlers == before


def test_a_deep_compare_file_is_refused_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # before: read after the whole run, and a RecursionError there (exit 1)
    control = tmp_path / "metrics.json"
    control.write_text("{\"a\":" * 50_000 + "1" + "}" * 50_000)
    code = main(["bench", "--state", str(tmp_path / "no-state"), "--control-name", "x", "--out", str(tmp_path / "o"),
                 "--compare", str(control)])
    assert code == EXIT_INPUT
    assert _one_line_error(capsys) == (f"ragsweep: error: {control}: JSON nested deeper than 100 levels; expected "
                                       "the document the harness writes (a few levels)")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("flag", ["--latency-passes", "--latency-sample", "--workers"])
@pytest.mark.parametrize("value", ["0", "-2"])
def test_an_explicit_count_below_one_is_refused_not_defaulted(flag: str, value: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    # before: --latency-passes 0 and --latency-sample 0 silently ran the defaults (3 passes, 16 queries)
    with pytest.raises(SystemExit) as exit_info:
        main(["sweep", "run", "--state", "STATE", flag, value])
    assert exit_info.value.code == EXIT_USAGE
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"ragsweep sweep run: error: argument {flag}: {value}: expected 1 or more (leave the flag out for the default)")


def test_counts_given_are_kept_and_absent_ones_left_to_the_default() -> None:
    run = ["sweep", "run", "--state", "STATE"]
    given = build_parser().parse_args([*run, "--latency-passes", "1", "--latency-sample", "2", "--workers", "3"])
    assert (given.latency_passes, given.latency_sample, given.workers) == (1, 2, 3)
    absent = build_parser().parse_args(run)
    assert (absent.latency_passes, absent.latency_sample) == (None, None)


def test_sweep_run_shares_legs_unless_told_not_to() -> None:
    run = ["sweep", "run", "--state", "STATE"]
    assert build_parser().parse_args(run).share_legs is True
    assert build_parser().parse_args([*run, "--no-share-legs"]).share_legs is False


def test_a_rerank_cache_given_to_the_kubernetes_executor_is_named_as_unused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Each arm Job's scores stay on its pod: --rerank-cache does not reach the cluster, and says so."""
    seen: list[object] = []
    monkeypatch.setattr("harness.sweep.k8s.executor.run_from_args", lambda args, release: seen.append(args) or 0)
    argv = ["sweep", "run", "--executor", "k8s", "--state", str(tmp_path), "--arms", "fusion"]
    assert main([*argv, "--rerank-cache", str(tmp_path / "cache")]) == 0
    note = capsys.readouterr().err
    assert f"--rerank-cache {tmp_path / 'cache'} is this machine's score cache" in note and "for that pod only" in note
    assert main(argv) == 0 and "rerank-cache" not in capsys.readouterr().err
    assert len(seen) == 2
