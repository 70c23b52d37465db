"""Write the bundled all-MiniLM-L6-v2 as fp16 safetensors (45 MB) into ``.gpu/base``, the folder
``training/device_train.sh`` reads on a lent GPU machine: the fp32 file (91 MB) does not fit the
device's 64 MiB upload beside the repository. The device widens it back to fp32 before training;
fp16 keeps 11 significant bits of each pretrained weight.

    python -m training.carry_base [--out .gpu/base]
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from pathlib import Path

from safetensors.torch import load_file, save_file

from training.train_entailment import base_model_path

FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
         "special_tokens_map.json")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(".gpu/base"))
    args = parser.parse_args(argv)
    base = base_model_path()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copyfile(base / name, args.out / name)
    weights = {k: v.half().contiguous() for k, v in load_file(base / "model.safetensors").items()}
    save_file(weights, args.out / "model.safetensors", metadata={"format": "pt"})
    print(f"{args.out}: {sum(f.stat().st_size for f in args.out.iterdir()) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
