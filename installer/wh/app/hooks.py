"""What the CLI hands the logic about the target: the user's words (progress goes through
``wh.progress``, not through here).

Kept apart from the use cases so that paths that never resolve (a remembered lock, --help)
do not import the resolver and the lock writer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wh.env.environment import Environment, default_python, probe
from wh.errors import TargetOptionsError
from wh.model.target import Target, declared


@dataclass(frozen=True)
class TargetSpec:
    """What the user said about the target: an interpreter, or a platform + version."""

    python: Path | None = None
    platform: str | None = None
    python_version: str | None = None

    def resolve(self) -> tuple[Target, Environment | None]:
        if self.platform or self.python_version:
            if self.python is not None:
                raise TargetOptionsError("python-and-declared")
            if not (self.platform and self.python_version):
                raise TargetOptionsError("half-declared")
            return declared(self.platform, self.python_version), None
        env = probe(self.python or default_python(), cached=True)
        return env.target, env
