"""Replace a training mix only with the same bytes, unless asked: ``make train-data`` is meant to
rebuild what is vendored, and a silent rewrite would leave a manifest whose model was not trained
on the files beside it.

A builder writes its mix into a staging folder (``staging``), then ``install`` compares that
manifest with the one already in the output folder: the sha256 of each file, the counts, and
every other field, except ``derived_from.data`` (where the plain answerability mix was read
from, a path). The same: the folder is left as it is. Different: ``SystemExit`` naming each
difference, the folder untouched, unless ``force``; then the built files replace it (and files
the old manifest listed that the new one does not are removed). A folder with no manifest yet
takes the build as it is.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

IGNORED = frozenset({"derived_from.data"})
SHOWN = 12  # differences named in the message; the rest are counted


@contextmanager
def staging(out: Path) -> Iterator[Path]:
    """A temporary folder to build ``out``'s mix in (removed afterwards)."""
    with tempfile.TemporaryDirectory(prefix=f"{out.name}-build-") as tmp:
        yield Path(tmp)


def _flat(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _flat(item, f"{prefix}{key}.")
    else:
        yield prefix.rstrip("."), value


def _short(value: Any) -> str:
    if isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value):
        return value[:8] + "…"  # a sha256
    return json.dumps(value) if value is not None else "absent"


def differences(vendored: Mapping[str, Any], built: Mapping[str, Any]) -> list[str]:
    """Each manifest field whose value differs, files first: ``field: vendored X, built Y``."""
    old, new = dict(_flat(vendored)), dict(_flat(built))
    first = ("files.", "derived_from.files.", "train_pairs", "heldback_pairs")
    keys = sorted(
        (set(old) | set(new)) - IGNORED,
        key=lambda k: (next((i for i, p in enumerate(first) if k.startswith(p)), len(first)), k),
    )
    return [
        f"{key}: vendored {_short(old.get(key))}, built {_short(new.get(key))}"
        for key in keys
        if old.get(key) != new.get(key)
    ]


def install(built: Path, out: Path, *, force: bool) -> list[str]:
    """Put the mix in ``built`` into ``out`` under the rule above; return the differences."""
    manifest = json.loads((built / "manifest.json").read_text())
    previous = out / "manifest.json"
    vendored = json.loads(previous.read_text()) if previous.exists() else None
    found = differences(vendored, manifest) if vendored is not None else []
    if vendored is not None and not found:
        print(f"{out}: unchanged (this build gives the same files, sha256 in its manifest)")
        return found
    if found and not force:
        shown = "\n".join(f"  {line}" for line in found[:SHOWN])
        more = f"\n  ... and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
        raise SystemExit(
            f"{out} holds a mix this build does not reproduce; it was left unchanged:\n"
            f"{shown}{more}\n"
            f"To replace it anyway: --force (make train-data FORCE=1). To compare first: "
            f"--out another folder. How the vendored mix was made: {out / 'SOURCE.md'}."
        )
    out.mkdir(parents=True, exist_ok=True)
    for name in manifest["files"]:
        shutil.copyfile(built / name, out / name)
    for name in (vendored or {}).get("files", {}):
        if name not in manifest["files"]:
            (out / name).unlink(missing_ok=True)
    shutil.copyfile(built / "manifest.json", previous)
    if found:
        print(f"{out}: replaced (--force); {len(found)} manifest fields changed")
    return found
