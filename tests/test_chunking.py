from __future__ import annotations

from harness.index.chunking import ChunkingPolicy, chunk_meeting, speaker_turns
from harness.index.sentences import SPLITTER_IDENTITY, split_sentences
from harness.model import Meeting, Turn, file_uuid_for, word_count


def _meeting(turns: list[tuple[str, float, float, str]]) -> Meeting:
    return Meeting(
        corpus="hand", source_id="m", file_uuid=file_uuid_for("hand", "m"), title="m", timings_real=True,
        tier="A", licence="CC0-1.0",
        turns=tuple(Turn(index=i, speaker=s, start=a, end=b, text=t, words=word_count(t))
                    for i, (s, a, b, t) in enumerate(turns)),
    )


def test_sentence_splitter_respects_abbreviations_and_initials() -> None:
    assert split_sentences("Dr. Smith met J. Doe on Friday. Then we left! Ok") == [
        "Dr. Smith met J. Doe on Friday.", "Then we left!", "Ok"]
    assert SPLITTER_IDENTITY.startswith("ragsweep-regex-sentences/1+")


def test_shared_onset_is_ordered_by_end_then_id_so_grouping_is_stable() -> None:
    # The methodology's 471.983 case: a 10 ms backchannel and a long utterance share an
    # onset. (start, end, index) puts the backchannel first whatever the input order.
    m = _meeting([
        ("A", 0.0, 471.0, "first"),
        ("A", 471.983, 473.233, "I mean if you did it at the start"),
        ("B", 471.983, 471.993, "Uh-huh."),
    ])
    groups = speaker_turns(m.turns)
    assert [[t.index for t in g] for g in groups] == [[0], [2], [1]]
    chunks = chunk_meeting(m)
    assert [c.id for c in chunks] == [f"{m.file_uuid}_{i}" for i in range(3)]
    assert [c.speaker for c in chunks] == ["A", "B", "A"]


def test_long_turn_splits_at_sentence_boundaries() -> None:
    text = "One two three. Four five six. Seven eight nine ten eleven."
    chunks = chunk_meeting(_meeting([("A", 0.0, 11.0, text)]), ChunkingPolicy(max_words=6))
    assert [c.text for c in chunks] == ["One two three. Four five six.", "Seven eight nine ten eleven."]
    assert chunks[1].start == 6.0 and chunks[1].end == 11.0


def test_sentence_longer_than_the_cap_is_cut_by_words() -> None:
    text = " ".join(f"w{i}" for i in range(10))
    chunks = chunk_meeting(_meeting([("A", 0.0, 10.0, text)]), ChunkingPolicy(max_words=4))
    assert [c.words for c in chunks] == [4, 4, 2]


def test_chunking_policy_is_recorded() -> None:
    assert ChunkingPolicy().to_dict()["sentence_splitter"] == SPLITTER_IDENTITY
