"""Makes the repo root and the generated stubs importable from the venv, and adds its commands.

The project is not pip-installed (no build step; see the Makefile), so instead of console_scripts
this writes a .pth file and small launchers into the venv's bin/ for the documented commands.
"""

import pathlib
import site
import stat
import sys

# command name -> module run with `python -m`
COMMANDS = {
    "validate": "services.validator.cli",
}


def main(gen_dir: str) -> None:
    root = pathlib.Path.cwd().resolve()
    pth = pathlib.Path(site.getsitepackages()[0]) / "grounded.pth"
    pth.write_text(f"{root}\n{(root / gen_dir).resolve()}\n")
    bin_dir = pathlib.Path(sys.executable).parent
    for name, module in COMMANDS.items():
        launcher = bin_dir / name
        launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m {module} "$@"\n')
        launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


if __name__ == "__main__":
    main(sys.argv[1])
