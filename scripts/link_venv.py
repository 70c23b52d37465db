"""Makes the repo root and the generated stubs importable from the venv via a .pth file."""

import pathlib
import site
import sys


def main(gen_dir: str) -> None:
    root = pathlib.Path.cwd().resolve()
    pth = pathlib.Path(site.getsitepackages()[0]) / "grounded.pth"
    pth.write_text(f"{root}\n{(root / gen_dir).resolve()}\n")


if __name__ == "__main__":
    main(sys.argv[1])
