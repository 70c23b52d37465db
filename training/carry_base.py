"""Carry the bundled all-MiniLM-L6-v2 to a lent GPU machine, and back to fp32 there.

    python -m training.carry_base [--out .gpu/base]              # here: fp16 safetensors, 45 MB
    python -m training.carry_base --widen .gpu/base --out /tmp/base   # there: fp32 again

``training/device_train.sh`` reads ``.gpu/base``: the fp32 file (91 MB) does not fit the
device's 64 MiB upload beside the repository. The device widens it back to fp32 before
training; fp16 keeps 11 significant bits of each pretrained weight.
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
         "special_tokens_map.json")  # fmt: skip


def copy_as(src: Path, dst: Path, dtype: torch.dtype) -> None:
    """The model directory ``src`` (config, tokenizer, weights) into ``dst``, weights as ``dtype``."""
    dst.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copyfile(src / name, dst / name)
    weights = {k: v.to(dtype).contiguous() for k, v in load_file(src / "model.safetensors").items()}
    save_file(weights, dst / "model.safetensors", metadata={"format": "pt"})


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(".gpu/base"))
    parser.add_argument(
        "--widen", type=Path, default=None, help="a carried fp16 directory to write as fp32"
    )
    args = parser.parse_args(argv)
    if args.widen is not None:
        copy_as(args.widen, args.out, torch.float32)
    else:
        from training.train_entailment import base_model_path

        copy_as(base_model_path(), args.out, torch.float16)
    print(f"{args.out}: {sum(f.stat().st_size for f in args.out.iterdir()) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
