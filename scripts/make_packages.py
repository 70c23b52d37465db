"""Adds empty __init__.py files to a generated stub tree so every package imports cleanly."""

import pathlib
import sys


def main(root: str) -> None:
    base = pathlib.Path(root)
    for directory in [p for p in base.rglob("*") if p.is_dir()]:
        (directory / "__init__.py").touch()


if __name__ == "__main__":
    main(sys.argv[1])
