"""Reading QMSum-format files: the fixture, synthetic timings, the summarize rule, bad input."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from harness.corpora.classify import classify_query, summarize_rule
from harness.corpora.qmsum import read_qmsum
from harness.corpora.timing import synthetic_timings
from harness.errors import InputDataError, IntegrityError
from harness.model import GoldSpan, file_uuid_for, word_count

FIXTURE = Path(__file__).parent / "fixtures" / "qmsum"
MANIFEST = FIXTURE / "SOURCES.tsv"
FIXTURE_COMMIT = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"


@pytest.fixture(scope="module")
def corpus():
    return read_qmsum(FIXTURE, manifest=MANIFEST)


def test_meetings_follow_the_source_files(corpus):
    assert corpus.name == "qmsum"
    assert corpus.version == FIXTURE_COMMIT
    assert (corpus.tier, corpus.licence) == ("A", "MIT")
    assert [(m.source_id, m.domain, len(m.turns)) for m in corpus.meetings] == [
        ("Bfx001", "Academic", 15),
        ("Bfx002", "Academic", 12),
        ("FX1001a", "Product", 16),
        ("parks_3", "Committee", 13),
    ]
    for meeting in corpus.meetings:
        assert meeting.file_uuid == file_uuid_for("qmsum", meeting.source_id)
        assert meeting.title == meeting.source_id
        assert meeting.recorded_date is None and meeting.recorded_date_source == "none"
        assert meeting.timings_real is False
        assert (meeting.tier, meeting.licence, meeting.corpus) == ("A", "MIT", "qmsum")
    parks = corpus.meetings[3]
    assert parks.turns[8].speaker == "Councillor Hughes"
    assert parks.turns[8].text == "Agreed, reluctantly."
    assert parks.turns[8].words == 2


def test_synthetic_timings_follow_the_documented_formula(corpus):
    first = corpus.meetings[0].turns[0]
    # "Okay, we're recording. Let's start with the noise work, since that's what everyone is
    # waiting on." is 16 whitespace words: 16 x 0.4 s = 6.4 s, starting at 0.
    assert first.words == 16
    assert (first.start, first.end) == (0.0, 6.4)
    will_do = corpus.meetings[2].turns[14]
    assert will_do.text == "Will do." and will_do.words == 2
    assert will_do.duration == pytest.approx(1.0)  # 0.8 s raised to the 1 s floor
    for meeting in corpus.meetings:
        for previous, turn in zip(meeting.turns, meeting.turns[1:], strict=False):
            assert turn.start == previous.end


def test_synthetic_timings_by_hand():
    # durations: floor 1 s for 0, 1 and 2 words; 3 words = 1.2 s; 10 words = 4 s.
    assert synthetic_timings([0, 1, 2, 3, 10]) == [(0.0, 1.0), (1.0, 2.0), (2.0, 3.0), (3.0, 4.2), (4.2, 8.2)]
    assert synthetic_timings([]) == []


def test_specific_queries_become_rank_scored_queries(corpus):
    assert [(q.id, q.query_class) for q in corpus.queries] == [
        ("qmsum-Bfx001-000", "lookup"),
        ("qmsum-Bfx001-001", "summarize"),
        ("qmsum-Bfx001-002", "lookup"),
        ("qmsum-Bfx002-000", "lookup"),
        ("qmsum-Bfx002-001", "summarize"),
        ("qmsum-Bfx002-002", "lookup"),
        ("qmsum-FX1001a-000", "lookup"),
        ("qmsum-FX1001a-001", "summarize"),
        ("qmsum-FX1001a-002", "lookup"),
        ("qmsum-parks_3-000", "lookup"),
        ("qmsum-parks_3-001", "summarize"),
        ("qmsum-parks_3-002", "lookup"),
    ]
    assert all(q.scored_on == "rank" and q.corpus == "qmsum" and q.tier == "A" for q in corpus.queries)
    by_id = {q.id: q for q in corpus.queries}
    bfx001 = file_uuid_for("qmsum", "Bfx001")
    assert by_id["qmsum-Bfx001-001"].gold == (
        GoldSpan(file_uuid=bfx001, start_turn=8, end_turn=10),
        GoldSpan(file_uuid=bfx001, start_turn=11, end_turn=13),
    )
    assert by_id["qmsum-Bfx001-001"].text == "Summarize the discussion about the voice activity detector."
    parks = file_uuid_for("qmsum", "parks_3")
    assert by_id["qmsum-parks_3-000"].gold == (GoldSpan(file_uuid=parks, start_turn=1, end_turn=1),)


def test_general_queries_are_counted_not_scored(corpus):
    # one general query per meeting, two in Bfx002
    assert corpus.dropped == {"general_query_not_scored": 5, "specific_query_without_span": 0}


def test_checksums_cover_every_file_read(corpus):
    expected = {}
    for path in sorted((FIXTURE / "data").rglob("*.json")):
        rel = path.relative_to(FIXTURE).as_posix()
        expected[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    assert corpus.checksums == expected


def test_reading_is_deterministic(corpus):
    again = read_qmsum(FIXTURE, manifest=MANIFEST)
    assert again == corpus
    assert again.model_dump_json() == corpus.model_dump_json()


def test_words_are_whitespace_counts(corpus):
    raw = json.loads((FIXTURE / "data/ALL/test/Bfx002.json").read_text(encoding="utf-8"))
    meeting = corpus.meetings[1]
    assert [t.words for t in meeting.turns] == [word_count(t["content"]) for t in raw["meeting_transcripts"]]


def test_default_manifest_is_the_packaged_pinned_one(tmp_path):
    with pytest.raises(IntegrityError, match=r"^data/ALL/test/Bed003.json: missing under"):
        read_qmsum(tmp_path)


# --------------------------------------------------------------------------- bad input

REL = "data/ALL/test/Bad001.json"


def _good() -> dict[str, Any]:
    raw = json.loads((FIXTURE / "data/ALL/train/Bfx001.json").read_text(encoding="utf-8"))
    return copy.deepcopy(raw)


def _write(tmp_path: Path, payload: Any, *, raw_text: str | None = None, commit: bool = True) -> Path:
    """A one-meeting corpus under tmp_path with a manifest that pins its real hash."""
    data = (raw_text if raw_text is not None else json.dumps(payload)).encode("utf-8")
    target = tmp_path / REL
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    head = "# pinned commit " + "2" * 40 + "\n" if commit else "# no commit here\n"
    manifest = tmp_path / "SOURCES.tsv"
    manifest.write_text(
        head
        + f"path\tsize\tsha256\tdomain\n{REL}\t{len(data)}\t{hashlib.sha256(data).hexdigest()}\tAcademic\n",
        encoding="utf-8",
    )
    return manifest


def _mutate(path: str, value: Any):
    """Set (or with value=KeyError, delete) the field at a dotted/indexed path."""

    def apply(doc: dict[str, Any]) -> dict[str, Any]:
        keys: list[Any] = []
        for part in path.replace("]", "").replace("[", ".").split("."):
            keys.append(int(part) if part.isdigit() else part)
        holder: Any = doc
        for key in keys[:-1]:
            holder = holder[key]
        if value is KeyError:
            del holder[keys[-1]]
        else:
            holder[keys[-1]] = value
        return doc

    return apply


BAD = [
    (
        "specific_query_list[0].relevant_text_span[0]",
        ["1", "812"],
        "specific_query_list[0].relevant_text_span[0]: end turn 812 is past the last turn (14)",
    ),
    (
        "specific_query_list[2].relevant_text_span[0]",
        ["15", "15"],
        "specific_query_list[2].relevant_text_span[0]: start turn 15 is past the last turn (14)",
    ),
    (
        "specific_query_list[1].relevant_text_span[1]",
        ["13", "11"],
        "specific_query_list[1].relevant_text_span[1]: reversed range: start turn 13 is after end turn 11",
    ),
    (
        "specific_query_list[0].relevant_text_span[0]",
        ["1", "3a"],
        'specific_query_list[0].relevant_text_span[0][1]: expected a decimal string, got a string "3a"',
    ),
    (
        "specific_query_list[0].relevant_text_span[0]",
        ["-1", "3"],
        'specific_query_list[0].relevant_text_span[0][0]: expected a decimal string, got a string "-1"',
    ),
    (
        "specific_query_list[0].relevant_text_span[0]",
        [1, 3],
        "specific_query_list[0].relevant_text_span[0][0]: expected a decimal string, got a number 1",
    ),
    (
        "specific_query_list[0].relevant_text_span[0]",
        ["1"],
        "specific_query_list[0].relevant_text_span[0]: "
        'expected a [start, end] pair of decimal strings, got ["1"]',
    ),
    (
        "specific_query_list[0].relevant_text_span",
        "1-3",
        'specific_query_list[0].relevant_text_span: expected a list, got a string "1-3"',
    ),
    (
        "specific_query_list[0].relevant_text_span",
        KeyError,
        "specific_query_list[0].relevant_text_span: missing",
    ),
    ("specific_query_list[0].query", KeyError, "specific_query_list[0].query: missing"),
    ("specific_query_list[0].query", "   ", "specific_query_list[0].query: empty"),
    ("specific_query_list[0].answer", None, "specific_query_list[0].answer: expected a string, got null"),
    (
        "specific_query_list[1]",
        "Summarize it",
        'specific_query_list[1]: expected an object, got a string "Summarize it"',
    ),
    ("specific_query_list", {}, "specific_query_list: expected a list, got an object"),
    ("general_query_list[0].query", KeyError, "general_query_list[0].query: missing"),
    ("meeting_transcripts", KeyError, "meeting_transcripts: missing"),
    ("meeting_transcripts", [], "meeting_transcripts: empty: a meeting needs at least one turn"),
    ("meeting_transcripts[2].speaker", KeyError, "meeting_transcripts[2].speaker: missing"),
    (
        "meeting_transcripts[3].content",
        42,
        "meeting_transcripts[3].content: expected a string, got a number 42",
    ),
    ("topic_list", None, "topic_list: expected a list, got null"),
]


@pytest.mark.parametrize(("field", "value", "message"), BAD, ids=[f"{b[0]}={b[1]!r}" for b in BAD])
def test_malformed_input_names_file_and_field(tmp_path, field, value, message):
    manifest = _write(tmp_path, _mutate(field, value)(_good()))
    with pytest.raises(InputDataError) as info:
        read_qmsum(tmp_path, manifest=manifest)
    assert str(info.value) == f"{REL}: {message}"


def test_span_past_the_end_of_the_only_turn_message(tmp_path):
    payload = _good()
    payload["specific_query_list"][0]["relevant_text_span"] = [["0", "14"], ["3", "15"]]
    manifest = _write(tmp_path, payload)
    with pytest.raises(
        InputDataError,
        match=r"^data/ALL/test/Bad001\.json: specific_query_list\[0\]\.relevant_text_span\[1\]: "
        r"end turn 15 is past the last turn \(14\)$",
    ):
        read_qmsum(tmp_path, manifest=manifest)


def test_top_level_must_be_an_object(tmp_path):
    manifest = _write(tmp_path, [_good()])
    with pytest.raises(InputDataError, match=f"^{REL}: expected an object, got a list$"):
        read_qmsum(tmp_path, manifest=manifest)


def test_invalid_json_names_line_and_column(tmp_path):
    manifest = _write(tmp_path, None, raw_text='{\n  "topic_list": [,]\n}')
    with pytest.raises(InputDataError, match=f"^{REL}: line 2 column 18: invalid JSON"):
        read_qmsum(tmp_path, manifest=manifest)


def test_query_without_spans_is_counted_and_ids_keep_positions(tmp_path):
    payload = _good()
    payload["specific_query_list"][0]["relevant_text_span"] = []
    payload["extra_field"] = {"ignored": True}  # unknown top-level keys are ignored
    corpus = read_qmsum(tmp_path, manifest=_write(tmp_path, payload))
    assert [q.id for q in corpus.queries] == ["qmsum-Bad001-001", "qmsum-Bad001-002"]
    assert corpus.dropped == {"general_query_not_scored": 1, "specific_query_without_span": 1}
    assert corpus.version == "2" * 40


def test_file_that_differs_from_its_manifest_is_refused(tmp_path):
    manifest = _write(tmp_path, _good())
    (tmp_path / REL).write_text(json.dumps(_good()) + " ", encoding="utf-8")
    with pytest.raises(IntegrityError, match=f"^{REL}: sha256 [0-9a-f]{{64}} under .*, expected "):
        read_qmsum(tmp_path, manifest=manifest)


def test_manifest_without_a_commit_is_refused(tmp_path):
    manifest = _write(tmp_path, _good(), commit=False)
    with pytest.raises(InputDataError, match="no 'pinned commit' comment"):
        read_qmsum(tmp_path, manifest=manifest)


# --------------------------------------------------------------------------- the summarize rule

CLASSES = [
    ("Summarize the discussion about the remote's buttons.", "summarize", "summarize-verb"),
    ("summarise the debate on the surfacing", "summarize", "summarize-verb"),
    ("Could you please sum up what was said about pricing?", "summarize", "summarize-verb"),
    ("Recap the decisions on the budget.", "summarize", "summarize-verb"),
    ("Give me a brief summary of the evaluation.", "summarize", "summary-noun"),
    ("Provide an overview of the marketing report.", "summarize", "summary-noun"),
    ("Describe the whole discussion concerning the animal drawings.", "summarize", "describe-discussion"),
    ("Briefly describe the meeting about the budget.", "summarize", "describe-discussion"),
    ("What was the discussion about the jog dial?", "summarize", "discussion-about"),
    ("What was the general discussion of the meeting?", "summarize", "discussion-about"),
    ("What were the discussions on policy amendments?", "summarize", "discussion-about"),
    ("What was discussed about contextualizing output?", "summarize", "discussion-about"),
    ("What did the group discuss about the price?", "lookup", None),
    ("What did Marketing say about the summary slide?", "lookup", None),
    ("Why did the group choose yellow?", "lookup", None),
    ("Describe the prototype's shape.", "lookup", None),
    ("What was the decision about the battery?", "lookup", None),
    ("What was said about the transcription backlog?", "lookup", None),
    ("Did anyone summarize the budget?", "lookup", None),
    ("Summary statistics: how many files were compressed?", "lookup", None),
]


@pytest.mark.parametrize(("text", "query_class", "rule"), CLASSES, ids=[c[0] for c in CLASSES])
def test_summarize_rule(text, query_class, rule):
    assert classify_query(text) == query_class
    assert summarize_rule(text) == rule
