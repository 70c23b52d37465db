"""Fine-tune the bundled all-MiniLM-L6-v2 bi-encoder so a question lands near the sentence that
answers it (CPU, resumable).

Input: the answerability mix in ``training/data/answerability/`` (already vendored: no new
data). Every ``answers`` pair is one (question, answering sentence) row; a ``not_answers``
sentence the mix paired with the same question (another sentence of the paragraph, the
closest distractor, the sections BM25 ranks highest for a plain IPC question) is its hard
negative. Questions within cosine 0.75 of an IPC evaluation question
(``training.near_duplicates``) are dropped first, so no evaluation set is trained on.

Loss: sentence-transformers' MultipleNegativesRankingLoss (in-batch negatives plus the hard
negative); batches never hold the same question or the same sentence twice, because either
would turn a right answer into an in-batch "negative". A checkpoint every
``--checkpoint-every`` steps (model, optimiser, scheduler, RNG and position: a killed run
resumes; only under the same data, base, rows and arguments, ``training.loop.resume``), a log
file and tqdm progress. Before training and at the end, recall@1/@10 of the held-back pairs
(``heldback.jsonl.gz``: groups the training split never saw) over the pool of every held-back
sentence is logged, base model and fine-tuned side by side. The final model is
written in sentence-transformers format to ``<out>/final``; retrieval loads it with
``RETRIEVAL_MODEL_PATH=<out>/final`` (and ``python -m evaluation --set
RETRIEVAL_MODEL_PATH=...`` builds its indexes with it). Not shipped: the first model trained
here did not meet its decision rule (docs/EVALUATION.md, "A retrieval model fine-tuned for
questions").
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import logging
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from services.retrieval.embedding import Encoder, SentenceTransformerEncoder
from training.loop import adamw_linear, optimise, resume, training_log
from training.near_duplicates import (
    EVALUATION_SETS,
    MAX_SIMILARITY,
    embed,
    nearest_similarity,
    questions,
)
from training.train_entailment import (
    base_model_path,
    checked_data,
    read_pairs,
    training_file,
    weights_sha256,
)

logger = logging.getLogger("training.retrieval")


def triplets(rows: Sequence[dict[str, str]], rng: random.Random) -> list[tuple[str, str, str]]:
    """One row per distinct (question, answering sentence); the hard negative is drawn (seeded)
    from the sentences the mix marked as not answering that question, else from the
    not-answering sentences of the question's group."""
    positives: dict[str, list[str]] = collections.defaultdict(list)
    negatives: dict[str, list[str]] = collections.defaultdict(list)
    group_negatives: dict[str, list[str]] = collections.defaultdict(list)
    group_of: dict[str, str] = {}
    for row in rows:
        question, sentence = row["hypothesis"], row["premise"]
        group_of.setdefault(question, row["group"])
        if row["label"] == "answers":
            if sentence not in positives[question]:
                positives[question].append(sentence)
        else:
            negatives[question].append(sentence)
            group_negatives[row["group"]].append(sentence)
    out: list[tuple[str, str, str]] = []
    for question in sorted(positives):
        answering = set(positives[question])
        pool = [s for s in negatives[question] if s not in answering] or [
            s for s in group_negatives[group_of[question]] if s not in answering
        ]
        if not pool:
            continue
        pool = sorted(set(pool))
        for sentence in positives[question]:
            out.append((question, sentence, rng.choice(pool)))
    return out


def drop_near_duplicates(
    items: list[tuple[str, str, str]], encoder: Encoder
) -> tuple[list[tuple[str, str, str]], int]:
    """Drop rows whose question is within ``MAX_SIMILARITY`` of an IPC evaluation question."""
    evaluation = [q for path in EVALUATION_SETS for q in questions(path)]
    asked = sorted({q for q, _, _ in items})
    near = nearest_similarity(embed(encoder, asked), embed(encoder, evaluation))
    dropped = {q for q, s in zip(asked, near, strict=True) if s >= MAX_SIMILARITY}
    return [t for t in items if t[0] not in dropped], len(dropped)


def batches(
    items: Sequence[tuple[str, str, str]], size: int, rng: random.Random
) -> list[list[int]]:
    """Shuffled batches in which no question and no sentence (positive or negative) repeats."""
    order = list(range(len(items)))
    rng.shuffle(order)
    out: list[list[int]] = []
    pending = order
    while pending:
        batch: list[int] = []
        seen: set[str] = set()
        rest: list[int] = []
        for i in pending:
            q, p, n = items[i]
            if len(batch) < size and not ({q, p, n} & seen):
                batch.append(i)
                seen |= {q, p, n}
            else:
                rest.append(i)
        out.append(batch)
        pending = rest
    return out


def heldback_recall(encoder: Encoder, rows: Sequence[dict[str, str]]) -> dict[str, float]:
    """Recall@1/@10 of an answering sentence, each held-back question against every held-back
    sentence (a pool of a few thousand: a miniature corpus none of which was trained on)."""
    sentences = sorted({r["premise"] for r in rows})
    index = {s: i for i, s in enumerate(sentences)}
    answering: dict[str, set[int]] = collections.defaultdict(set)
    for r in rows:
        if r["label"] == "answers":
            answering[r["hypothesis"]].add(index[r["premise"]])
    asked = sorted(answering)
    scores = embed(encoder, asked) @ embed(encoder, sentences).T
    top = np.argsort(-scores, axis=1)[:, :10]
    hits1 = [bool(answering[q] & {int(top[i, 0])}) for i, q in enumerate(asked)]
    hits10 = [bool(answering[q] & {int(j) for j in top[i]}) for i, q in enumerate(asked)]
    return {
        "questions": len(asked),
        "pool": len(sentences),
        "recall@1": float(np.mean(hits1)),
        "recall@10": float(np.mean(hits10)),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("training/data/answerability"))
    parser.add_argument("--out", type=Path, default=Path("var/train/retrieval"))
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--warmup", type=float, default=0.1)
    parser.add_argument("--scale", type=float, default=20.0, help="MNRL similarity scale")
    parser.add_argument(
        "--max-length", type=int, default=128, help="training truncation (99%% are <= 116 tokens)"
    )
    parser.add_argument("--seed", type=int, default=20261126)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--checkpoint-every", type=int, default=50)
    parser.add_argument("--limit", type=int, default=0, help="train on N rows (smoke runs)")
    parser.add_argument(
        "--max-steps", type=int, default=0, help="stop after N steps (a later run resumes)"
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="start at step 0 even if --out holds a checkpoint (without it, a checkpoint of "
        "another run stops this one)",
    )
    args = parser.parse_args(argv)

    with training_log(logger, args.out):
        _train(args)


# The arguments that shape what is trained: a checkpoint resumes only under the same ones.
SHAPING = ("limit", "epochs", "batch_size", "lr", "warmup", "scale", "max_length", "seed")


def _train(args: argparse.Namespace) -> None:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)

    model = SentenceTransformer(str(base_model_path()), device="cpu")
    encoder = SentenceTransformerEncoder(model, "training")  # the model as retrieval encodes
    serving_length = model.max_seq_length
    data_sha = checked_data(args.data, [training_file(args.data).name, "heldback.jsonl.gz"])
    rows = read_pairs(training_file(args.data))
    heldback = read_pairs(args.data / "heldback.jsonl.gz")
    items = triplets(rows, rng)
    items, dropped = drop_near_duplicates(items, encoder)
    if args.limit:
        items = items[: args.limit]
    logger.info(
        "train rows %d (%d questions; %d questions dropped as near-duplicates of an IPC "
        "evaluation question), held back %d pairs",
        len(items), len({q for q, _, _ in items}), dropped, len(heldback),
    )  # fmt: skip

    ckpt = args.out / "checkpoint.pt"
    base_file = args.out / "base_heldback.json"
    if not base_file.exists():
        model.eval()
        base_file.write_text(json.dumps(heldback_recall(encoder, heldback), indent=2) + "\n")
    logger.info("base model held-back %s", base_file.read_text().strip().replace("\n", ""))

    model.max_seq_length = args.max_length
    loss_fn = MultipleNegativesRankingLoss(model, scale=args.scale)
    model.train()
    epoch_batches = batches(items, args.batch_size, random.Random(args.seed))
    total = max(1, int(len(epoch_batches) * args.epochs))
    optimizer, scheduler = adamw_linear(model, args.lr, total, args.warmup)
    fingerprint = {
        **{f"sha256 {name}": digest for name, digest in data_sha.items()},
        "sha256 base weights": weights_sha256(base_model_path()),
        # the rows after the near-duplicate filter, which follows the evaluation sets' list
        "sha256 training rows": hashlib.sha256(json.dumps(items).encode()).hexdigest(),
        **{name: getattr(args, name) for name in SHAPING},
        "total_steps": total,
    }
    state = resume(ckpt, model, optimizer, scheduler, logger, fingerprint, fresh=args.fresh)

    def batch_loss(idx: Sequence[int]) -> torch.Tensor:
        chosen = [items[i] for i in idx]
        features = [model.preprocess([row[column] for row in chosen]) for column in range(3)]
        loss: torch.Tensor = loss_fn(features, None)
        return loss

    done = optimise(
        model=model,
        optimizer=optimizer,
        scheduler=scheduler,
        ckpt=ckpt,
        state=state,
        total=total,
        max_steps=args.max_steps,
        epoch_batches=lambda epoch: batches(
            items, args.batch_size, random.Random(args.seed + epoch)
        ),
        batch_loss=batch_loss,
        checkpoint_every=args.checkpoint_every,
        logger=logger,
        fingerprint=fingerprint,
        ema_decay=0.95,
        rate_format="%.3f",
    )
    if not done:
        return

    model.eval()
    model.max_seq_length = serving_length
    tuned = heldback_recall(encoder, heldback)
    logger.info("fine-tuned held-back %s", json.dumps(tuned))
    final = args.out / "final"
    model.save(str(final))
    summary = {
        **{k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "steps": state["step"],
        "train_rows": len(items),
        "dropped_near_duplicate_questions": dropped,
        "heldback_base": json.loads(base_file.read_text()),
        "heldback_finetuned": tuned,
        "base": "sentence-transformers/all-MiniLM-L6-v2",
    }
    (final / "training.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
