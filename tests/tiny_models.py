"""Small models made in a test, never fetched: their plumbing is under test, not their scores."""

from __future__ import annotations

from pathlib import Path

TEXT = ("what did the group decide about budget we agreed to cut marketing by ten percent remote control "
        "needs a bigger button lunch is at noon")
WORDS = tuple(TEXT.split())


def tiny_cross_encoder(out: Path) -> Path:
    """A two-layer BERT sequence classifier with seeded random weights and a vocabulary of WORDS, in ``out``."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    out.mkdir(parents=True, exist_ok=True)
    vocab = out / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(set(WORDS))]) + "\n")
    BertTokenizer(str(vocab)).save_pretrained(out)
    torch.manual_seed(7)
    config = BertConfig(vocab_size=5 + len(set(WORDS)), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(out)
    return out
