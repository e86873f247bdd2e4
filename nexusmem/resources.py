"""Find the shell and git hook scripts, whether installed from a wheel or run from a source checkout."""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def script_path(relative: str) -> Path:
    """Path of a shipped script such as 'shell/nexusmem.bash' or 'hooks/post-commit'.

    A wheel carries them under nexusmem/_data/; an editable install or a checkout has them at the top level.
    """
    for candidate in (_PKG / "_data" / relative, _PKG.parent / relative):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"NexusMem script {relative!r} is missing from this installation ({_PKG})")
