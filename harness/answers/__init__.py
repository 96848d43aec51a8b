"""Answers stage: answer-level scoring of aggregation questions, and the answerers.

Aggregation questions ("how many meetings mention X") have an integer, a file set or a
speaker as their truth, which no rank measure can score. They carry
``scored_on="answer"`` and go to this second engine, with its own measures (EM,
partial, answered, setF1) and its own table (answers.md). Answers come from exact
aggregations and store queries only, never from a model and never from retrieval.
See docs/answers.md.
"""

from harness.answers.answerers import ANSWERERS, Answerer, NoneAnswerer, make_answerer
from harness.answers.evaluate import AnswerRecord, build_rows, evaluate_answers
from harness.answers.mechanisms import MECHANISMS, AnswerStore, PhraseAggregator, Sources, execute
from harness.answers.model import Answer, Intent, SpeakerAnswer
from harness.answers.results import AnswerSettings, answers_block
from harness.answers.scoring import ANSWER_MEASURES, RULE_KINDS, AnswerScores, ScoringPolicy, score_answer

__all__ = [
    "ANSWERERS",
    "ANSWER_MEASURES",
    "MECHANISMS",
    "RULE_KINDS",
    "Answer",
    "AnswerRecord",
    "AnswerScores",
    "AnswerSettings",
    "AnswerStore",
    "Answerer",
    "Intent",
    "NoneAnswerer",
    "PhraseAggregator",
    "ScoringPolicy",
    "Sources",
    "SpeakerAnswer",
    "answers_block",
    "build_rows",
    "evaluate_answers",
    "execute",
    "make_answerer",
    "score_answer",
]
