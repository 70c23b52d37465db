"""The resumable optimisation loop every trainer here shares (entailment/answerability cross-
encoders, the retrieval bi-encoder): checkpoint load and save, epoch replay, loss EMA, progress
and the periodic log line. What differs per trainer is passed in: how an epoch is cut into
batches and what one batch's loss is."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm
from transformers import get_linear_schedule_with_warmup


@contextmanager
def training_log(logger: logging.Logger, out: Path) -> Iterator[None]:
    """``logger`` writes INFO lines to ``out/train.log`` and stderr for the block."""
    out.mkdir(parents=True, exist_ok=True)
    handlers: list[logging.Handler] = [
        logging.FileHandler(out / "train.log"),
        logging.StreamHandler(),
    ]
    for handler in handlers:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        for handler in handlers:
            logger.removeHandler(handler)
            handler.close()


def adamw_linear(model: Any, lr: float, total: int, warmup: float) -> tuple[Any, Any]:
    """The trainers' optimiser recipe: AdamW (weight decay 0.01) with a linear warm-up over the
    first ``warmup`` fraction of ``total`` steps, then linear decay to zero."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    return optimizer, get_linear_schedule_with_warmup(optimizer, int(total * warmup), total)


def save_checkpoint(
    path: Path,
    model: Any,
    optimizer: Any,
    scheduler: Any,
    state: dict[str, Any],
    fingerprint: Mapping[str, Any],
) -> None:
    saved = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "state": state,
        "fingerprint": dict(fingerprint),
        "torch_rng": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        saved["cuda_rng"] = torch.cuda.get_rng_state_all()  # dropout draws on the GPU's generator
    tmp = path.with_suffix(".tmp")
    torch.save(saved, tmp)
    tmp.replace(path)  # atomic: a kill during the save never leaves a half-written checkpoint


def fingerprint_changes(saved: Mapping[str, Any] | None, now: Mapping[str, Any]) -> list[str]:
    """What differs between the run a checkpoint was written by and this one (empty: the same)."""
    if saved is None:
        return ["the checkpoint has no fingerprint (written before checkpoints carried one)"]
    return [
        f"{key}: {saved.get(key, 'absent')!r} in the checkpoint, {now.get(key, 'absent')!r} now"
        for key in sorted(set(saved) | set(now))
        if saved.get(key) != now.get(key)
    ]


def resume(
    ckpt: Path,
    model: Any,
    optimizer: Any,
    scheduler: Any,
    logger: logging.Logger,
    fingerprint: Mapping[str, Any],
    *,
    fresh: bool = False,
) -> dict[str, Any]:
    """The training position: a fresh one, or the checkpoint's (restoring every state in it).

    A checkpoint is resumed only by the run that wrote it: its ``fingerprint`` (the data's
    sha256s, the base weights, every argument that shapes training, the total steps) must equal
    this run's, else ``SystemExit`` names what differs. ``fresh``: the checkpoint is ignored
    (and replaced by this run's first one). Loaded onto the CPU first, so a checkpoint written
    on a GPU resumes on a machine without one."""
    state: dict[str, Any] = {"step": 0, "epoch": 0, "batch": 0, "loss_ema": None}
    if not ckpt.exists():
        return state
    if fresh:
        # Not opened: --fresh is also the way past a checkpoint that cannot be read.
        logger.info("--fresh: not resuming %s; this run starts at step 0 and replaces it", ckpt)
        return state
    saved = torch.load(ckpt, weights_only=False, map_location="cpu")
    changes = fingerprint_changes(saved.get("fingerprint"), fingerprint)
    if changes:
        raise SystemExit(
            f"{ckpt} was written by another run, so it is not resumed:\n"
            + "".join(f"  {line}\n" for line in changes)
            + "Start over with --fresh (make: FRESH=1; the checkpoint is replaced), or give "
            "another --out."
        )
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])  # moves its state to the parameters' device
    scheduler.load_state_dict(saved["scheduler"])
    torch.set_rng_state(saved["torch_rng"])
    if "cuda_rng" in saved:
        if torch.cuda.is_available() and torch.cuda.device_count() == len(saved["cuda_rng"]):
            torch.cuda.set_rng_state_all(saved["cuda_rng"])
        else:
            logger.info("the checkpoint's CUDA RNG state is not restored: no such GPU here")
    state = saved["state"]
    logger.info(
        "resumed from %s at step %d (epoch %d, batch %d; fingerprint matches: %s)",
        ckpt, state["step"], state["epoch"], state["batch"],
        ", ".join(f"{k}={v}" for k, v in sorted(fingerprint.items()) if not k.startswith("sha256 ")),
    )  # fmt: skip
    return state


def optimise(
    *,
    model: Any,
    optimizer: Any,
    scheduler: Any,
    ckpt: Path,
    state: dict[str, Any],
    total: int,
    max_steps: int,
    epoch_batches: Callable[[int], Sequence[Sequence[int]]],
    batch_loss: Callable[[Sequence[int]], torch.Tensor],
    checkpoint_every: int,
    logger: logging.Logger,
    fingerprint: Mapping[str, Any],
    ema_decay: float = 0.98,
    rate_format: str = "%.2f",
    after_step: Callable[[int], None] | None = None,
) -> bool:
    """Run steps until ``total`` (or ``max_steps``, for a run that a later one resumes); True
    when training is complete. An epoch's batches must depend only on the epoch number
    (``epoch_batches``), so a resumed run replays the same order and skips the batches it did.
    ``after_step`` is called with each step's number once it is taken (and checkpointed, where
    one is due): the trainers save their snapshots there. It must not draw random numbers, or
    the run would no longer be the one without it."""
    started = time.monotonic()
    progress = tqdm(total=total, initial=state["step"], desc="train", unit="step", mininterval=30)
    stop_at = min(total, max_steps) if max_steps else total
    while state["step"] < stop_at:
        plan = epoch_batches(state["epoch"])
        for b in range(state["batch"], len(plan)):
            if state["step"] >= stop_at:
                break
            loss = batch_loss(plan[b])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            value = loss.item()
            ema = state["loss_ema"]
            state["loss_ema"] = value if ema is None else ema_decay * ema + (1 - ema_decay) * value
            state["step"] += 1
            state["batch"] = b + 1
            progress.update(1)
            if state["step"] % checkpoint_every == 0:
                save_checkpoint(ckpt, model, optimizer, scheduler, state, fingerprint)
                rate = state["step"] / max(1e-9, time.monotonic() - started)
                logger.info(
                    "step %d/%d epoch %d loss_ema %.4f lr %.2e (" + rate_format + " steps/s this run)",
                    state["step"], total, state["epoch"], state["loss_ema"],
                    scheduler.get_last_lr()[0], rate,
                )  # fmt: skip
            if after_step is not None:
                after_step(state["step"])
        else:
            state["epoch"] += 1
            state["batch"] = 0
    progress.close()
    save_checkpoint(ckpt, model, optimizer, scheduler, state, fingerprint)
    if state["step"] < total:
        logger.info(
            "stopped at step %d of %d (--max-steps); run again to resume", state["step"], total
        )
        return False
    return True
