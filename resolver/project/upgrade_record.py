"""The project's default environment and its upgrades, in pixi.toml so that every checkout knows them.

``upgrade`` writes (pixi ignores ``[tool]``)::

    [tool.resolver.upgrade]
    default = "cpu"                # what setup, verify, bench, build, doctor and install use without --env
    candidate = "cpu-torch2-14"    # built beside the default by `upgrade`, not promoted yet
    previous = "cuda12"            # what `rollback` makes the default again (after a promotion)

    [tool.resolver.upgrade.environments]   # the request each environment is planned with
    cpu = { target = "cpu", torch = "2.13", python = "3.11" }
    cpu-torch2-14 = { target = "cpu", torch = "2.14", python = "3.11" }

It is read from pixi.toml by :mod:`resolver.project.pixi_toml` (``read_pixi_toml(...).tool.upgrade``,
:func:`~resolver.project.pixi_toml.default_environment`) and written back through
:meth:`resolver.project.manifest.Manifest.set_tool_table`. ``setup`` plans the default environment with its request, so a teammate who pulls a promoted upgrade
gets the new environment, and one who rolls back gets the old one, each exactly as locked.

>>> r = UpgradeRecord.from_table({"default": "cpu", "environments": {"cpu": {"target": "cpu", "torch": "2.13"}}})
>>> r.default, r.choices["cpu"].request().torch
('cpu', DottedVersion(parts=(2, 13)))
>>> UpgradeRecord.from_table(None).default is None
True
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Mapping

from resolver.core.errors import BadInput
from resolver.core.names import check_env_name

if TYPE_CHECKING:
    from resolver.core.model import Plan, Request

_FIX = "correct [tool.resolver.upgrade] in pixi.toml (docs/upgrade.md), or delete the table to forget the upgrades"
_ROLES = ("default", "candidate", "previous")


@dataclass(frozen=True)
class Choice:
    """The request an environment is planned with: ``target``, and the torch release and Python it keeps."""

    environment: str
    target: str = "auto"
    torch: str | None = None  # major.minor
    python: str | None = None  # major.minor

    @classmethod
    def of(cls, plan: Plan, environment: str | None = None) -> "Choice":
        """What plans ``plan`` again: its target, torch release and Python."""
        return cls(environment or plan.env_name, plan.target or "auto", str(plan.torch.version.truncate(2)),
                   str(plan.python))

    def request(self) -> Request:
        from resolver.core.model import Request, Target
        from resolver.core.versions import DottedVersion

        try:
            return Request(target=Target.parse(self.target),
                           python=DottedVersion.parse(self.python) if self.python else None,
                           torch=DottedVersion.parse(self.torch) if self.torch else None)
        except ValueError:
            raise BadInput(f"pixi.toml: [tool.resolver.upgrade.environments] {self.environment} holds a version that is "
                           "not X.Y", fix=_FIX) from None

    def to_json(self) -> dict[str, Any]:
        return {"environment": self.environment, "target": self.target, "torch": self.torch, "python": self.python}


@dataclass(frozen=True)
class UpgradeRecord:
    default: str | None = None
    candidate: str | None = None
    previous: str | None = None
    choices: Mapping[str, Choice] = field(default_factory=dict)

    @classmethod
    def from_table(cls, table: Any) -> "UpgradeRecord":
        """Read the ``[tool.resolver.upgrade]`` table itself (None: there is none)."""
        if table is None:
            return cls()
        if not isinstance(table, Mapping):
            raise BadInput("pixi.toml: [tool.resolver.upgrade] must be a table", fix=_FIX)
        roles: dict[str, str | None] = {}
        for role in _ROLES:
            value = table.get(role)
            roles[role] = None if value is None else check_env_name(value, where=f"[tool.resolver.upgrade] {role}",
                                                                    fix=_FIX)
        choices: dict[str, Choice] = {}
        envs = table.get("environments", {})
        if not isinstance(envs, Mapping):
            raise BadInput("pixi.toml: [tool.resolver.upgrade.environments] must be a table", fix=_FIX)
        for name, entry in envs.items():
            check_env_name(name, where="[tool.resolver.upgrade.environments]", fix=_FIX)
            if not isinstance(entry, Mapping) or not all(isinstance(v, str) for v in entry.values()):
                raise BadInput(f"pixi.toml: [tool.resolver.upgrade.environments] {name} must be a table of strings "
                               "(target, torch, python)", fix=_FIX)
            unknown = set(entry) - {"target", "torch", "python"}
            if unknown:
                raise BadInput(f"pixi.toml: [tool.resolver.upgrade.environments] {name} has unknown key(s) "
                               f"{', '.join(sorted(unknown))}", fix=_FIX)
            choices[name] = Choice(name, entry.get("target", "auto"), entry.get("torch"), entry.get("python"))
        return cls(roles["default"], roles["candidate"], roles["previous"], choices)

    def with_choice(self, choice: Choice) -> "UpgradeRecord":
        return replace(self, choices={**self.choices, choice.environment: choice})

    def choice(self, name: str | None) -> Choice | None:
        return self.choices.get(name) if name else None

    def to_json(self) -> dict[str, Any]:
        return {"default": self.default, "candidate": self.candidate, "previous": self.previous,
                "environments": {name: c.to_json() for name, c in sorted(self.choices.items())}}

    def write(self, manifest: Any) -> None:
        """Replace ``[tool.resolver.upgrade]`` of a :class:`~resolver.project.manifest.Manifest` (in memory; the
        caller saves it)."""
        manifest.set_tool_table("upgrade", self.to_table())

    def to_table(self) -> Any:
        """``[tool.resolver.upgrade]`` as a tomlkit table."""
        import tomlkit

        table = tomlkit.table()
        for role in _ROLES:
            value = getattr(self, role)
            if value:
                table[role] = value
        envs = tomlkit.table()
        for name, choice in sorted(self.choices.items()):
            entry = tomlkit.inline_table()
            entry["target"] = choice.target
            for key in ("torch", "python"):
                if getattr(choice, key):
                    entry[key] = getattr(choice, key)
            envs[name] = entry
        table["environments"] = envs
        return table
