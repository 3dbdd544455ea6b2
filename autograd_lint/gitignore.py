"""Git's ignore rules, for file discovery (``respect-gitignore``, on by
default as with ruff).

Inside a git repository (a folder with ``.git`` at or above it) a path is
ignored as git ignores it: by the ``.gitignore`` of each folder from the
repository's root down (a deeper one wins), ``.git/info/exclude`` and the
global excludes file (``core.excludesFile``, by default
``$XDG_CONFIG_HOME/git/ignore``). Outside a repository nothing is ignored,
as with ruff. The patterns are compiled by ``pathspec`` (git's wildmatch,
negation, anchoring, ``dir/``); each file is read once per run, and git is
never spawned: its configuration files are read directly.
"""

from __future__ import annotations

import os

from autograd_lint.record import Record

TYPE_CHECKING = False  # typing costs 4 ms at start-up; type checkers take this name as true
if TYPE_CHECKING:
    from typing import Any

    from pathspec import GitIgnoreSpec


class _Layer(Record):
    """One ignore file's patterns."""

    def __init__(
        self,
        # The folder its patterns are relative to (absolute).
        base: str,
        spec: GitIgnoreSpec,
        # It holds a "!" pattern: a folder it ignores may still hold files it
        # re-includes, so the walk must go in and ask about each file.
        negates: bool,
        # The index of the pattern that ignores the folder a walk started at (the
        # user named it): that pattern does not hide what lies below it.
        waived: int | None = None,
    ) -> None:
        self._store(locals())


class FolderRules:
    """The rules in force for the entries of one folder."""

    __slots__ = ("path", "layers")

    def __init__(self, path: str, layers: tuple[_Layer, ...]) -> None:
        self.path = path
        self.layers = layers

    def _decide(self, name: str, is_dir: bool) -> tuple[bool, int, int]:
        """Whether git ignores the entry ``name``, the layer that says so
        (-1: none does) and the index of its deciding pattern."""
        full = os.path.join(self.path, name)
        for i in range(len(self.layers) - 1, -1, -1):
            layer = self.layers[i]
            rel = full[len(layer.base) :].lstrip(os.sep)
            if os.sep != "/":
                rel = rel.replace(os.sep, "/")
            result = layer.spec.check_file(rel + "/" if is_dir else rel)
            if result.include is None or result.index == layer.waived:
                continue
            return bool(result.include), i, result.index
        return False, -1, -1

    def ignores_file(self, name: str) -> bool:
        return self._decide(name, False)[0]

    def prunes(self, name: str) -> bool:
        """Whether the folder ``name`` is ignored with all it holds."""
        ignored, i, index = self._decide(name, True)
        if not ignored:
            return False
        # A "dir/" pattern excludes the folder itself, and git re-includes
        # nothing below an excluded folder. Another pattern ("a/**", or "*"
        # before "!*/") may only say that what is inside is ignored: when a
        # "!" pattern could bring some of it back, each file is asked.
        return self.layers[i].spec.patterns[index].pattern.rstrip().endswith("/") or not any(
            layer.negates for layer in self.layers[i:]
        )


class GitIgnore:
    """Git's ignore rules for one run: every ignore file read once."""

    def __init__(self) -> None:
        self._folders: dict[str, FolderRules | None] = {}
        self._hidden: dict[str, bool] = {}
        self._user_excludes: str | None | bool = False  # False: not read yet

    def folder(self, path: str) -> FolderRules | None:
        """The rules for the entries of the folder ``path`` (absolute); None
        outside a git repository."""
        if path in self._folders:
            return self._folders[path]
        if os.path.exists(os.path.join(path, ".git")):
            # A repository's root (a nested repository starts afresh: its
            # parent's .gitignore files do not apply in it, as with git).
            layers: tuple[_Layer, ...] | None = self._repository_layers(path)
        else:
            parent = os.path.dirname(path)
            up = self.folder(parent) if parent != path else None
            layers = up.layers if up is not None else None
        rules = None
        if layers is not None:
            own = _read_layer(os.path.join(path, ".gitignore"), path)
            rules = FolderRules(path, (*layers, own) if own is not None else layers)
        self._folders[path] = rules
        return rules

    def enter(self, top: str) -> None:
        """A walk starts at the folder ``top`` (absolute), named by the user:
        even when git ignores it, it is walked (as ruff does), and the
        patterns that ignore it do not hide its contents; the other patterns
        still apply."""
        parent = os.path.dirname(top)
        up = self.folder(parent) if parent != top else None
        if up is None or not up.prunes(os.path.basename(top)):
            return
        waived = []
        for layer in up.layers:
            rel = top[len(layer.base) :].lstrip(os.sep).replace(os.sep, "/") + "/"
            result = layer.spec.check_file(rel)
            waived.append(_Layer(layer.base, layer.spec, layer.negates, waived=result.index) if result.include else layer)
        own = _read_layer(os.path.join(top, ".gitignore"), top)
        self._folders[top] = FolderRules(top, (*waived, own) if own is not None else tuple(waived))

    def ignores_path(self, path: str, is_dir: bool) -> bool:
        """Whether a walk from the repository's root would skip ``path``
        (absolute): it, or a folder above it, is ignored."""
        parent = os.path.dirname(path)
        rules = self.folder(parent) if parent != path else None
        if rules is None:
            return False
        if self._is_hidden(parent):
            return True
        name = os.path.basename(path)
        return rules.prunes(name) if is_dir else rules.ignores_file(name)

    def _is_hidden(self, folder: str) -> bool:
        """Whether a walk from the repository's root never enters ``folder``."""
        if folder in self._hidden:
            return self._hidden[folder]
        hidden = False
        if not os.path.exists(os.path.join(folder, ".git")):
            parent = os.path.dirname(folder)
            up = self.folder(parent) if parent != folder else None
            hidden = up is not None and (self._is_hidden(parent) or up.prunes(os.path.basename(folder)))
        self._hidden[folder] = hidden
        return hidden

    def _repository_layers(self, root: str) -> tuple[_Layer, ...]:
        """The global excludes file, then .git/info/exclude (lowest
        priority first, as git reads them)."""
        common = _common_dir(root)
        excludes = _core_excludes_file(os.path.join(common, "config")) if common else None
        if excludes is None:
            excludes = self._user_excludes_file()
        layers = []
        for path in (excludes, os.path.join(common, "info", "exclude") if common else None):
            layer = _read_layer(path, root) if path else None
            if layer is not None:
                layers.append(layer)
        return tuple(layers)

    def _user_excludes_file(self) -> str | None:
        if self._user_excludes is False:
            self._user_excludes = user_excludes_file()
        return self._user_excludes  # type: ignore[return-value]


def _read_layer(path: str, base: str) -> _Layer | None:
    """The patterns of the ignore file at ``path``; None when it is missing,
    unreadable or holds no pattern."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    patterns = [line for line in lines if line.strip() and not line.startswith("#")]
    if not patterns:
        return None
    # pathspec costs tens of milliseconds to import: only runs that meet an
    # ignore file pay for it.
    from pathspec import GitIgnoreSpec

    spec = GitIgnoreSpec.from_lines(lines)
    if not any(p.include is not None for p in spec.patterns):
        return None
    return _Layer(base=base, spec=spec, negates=any(p.include is False for p in spec.patterns))


def _common_dir(root: str) -> str | None:
    """The repository's git folder that holds ``config`` and ``info/``: the
    ``.git`` folder, or for a worktree or submodule (a ``.git`` file) the
    folder it points to, or that folder's ``commondir``."""
    dot_git = os.path.join(root, ".git")
    if os.path.isdir(dot_git):
        return dot_git
    try:
        with open(dot_git, encoding="utf-8") as f:
            first = f.readline().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not first.startswith("gitdir:"):
        return None
    git_dir = os.path.normpath(os.path.join(root, first[len("gitdir:") :].strip()))
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as f:
            return os.path.normpath(os.path.join(git_dir, f.read().strip()))
    except (OSError, UnicodeDecodeError):
        return git_dir


def user_excludes_file() -> str | None:
    """The global excludes file: ``core.excludesFile`` of the user's git
    configuration (``$XDG_CONFIG_HOME/git/config``, then ``~/.gitconfig``,
    which wins), else git's default ``$XDG_CONFIG_HOME/git/ignore``
    (``~/.config/git/ignore``)."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    found = None
    for config in (os.path.join(xdg, "git", "config"), os.path.join(os.path.expanduser("~"), ".gitconfig")):
        value = _core_excludes_file(config)
        if value is not None:
            found = value
    return found if found is not None else os.path.join(xdg, "git", "ignore")


def _core_excludes_file(config: str) -> str | None:
    """``core.excludesFile`` in the git configuration file ``config`` (the
    last one set), ``~`` expanded; None when it is not set there."""
    try:
        with open(config, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    section = ""
    found = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            end = line.find("]")
            if end < 0:
                continue
            # "[core]" (any case); a subsection ([core "x"]) is another section.
            section = line[1:end].strip().lower()
            line = line[end + 1 :].strip()
        if not line or line[0] in "#;" or section != "core":
            continue
        key, eq, value = line.partition("=")
        if eq and key.strip().lower() == "excludesfile":
            found = _config_value(value)
    return os.path.expanduser(found) if found else found


def _config_value(raw: str) -> str:
    """A git configuration value: quotes removed, escapes read, an inline
    comment cut."""
    out: list[str] = []
    quoted = False
    chars: Any = iter(raw.strip())
    for c in chars:
        if c == "\\":
            nxt = next(chars, "")
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(nxt, nxt))
        elif c == '"':
            quoted = not quoted
        elif c in "#;" and not quoted:
            break
        else:
            out.append(c)
    return "".join(out).strip()
