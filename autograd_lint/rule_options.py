"""The options rules take under ``[tool.autograd-lint.rule-options]``: each
option's rule, shape and default, in one table.

The configuration checks a file's options against this table when it reads
the file, so a misspelt key, a string where a list belongs or a regular
expression that does not compile is one error naming the file and the key
(exit 2) before any file is linted — never an internal error per file, and
never a silent run with the default.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class RuleOption:
    name: str
    rule: str  # the code of the rule that reads it
    default: tuple[str, ...]  # a list of regular expressions (the only shape so far)
    summary: str


OPTIONS: dict[str, RuleOption] = {
    o.name: o
    for o in (
        RuleOption(
            "eval-function-patterns",
            "AGL301",
            (r"(^|_)(evaluate|evaluation|eval|validate|validation|val|valid|test|testing|predict|prediction|inference|infer|generate|score)(_|$)",),
            "regular expressions searched for in a function's name: a match makes it evaluation code",
        ),
        RuleOption(
            "eval-loader-patterns",
            "AGL301",
            (r"^(val|valid|validation|eval|evaluation|test|testing|dev)_?(loader|dl|dataloader|data_loader|iter|batches|dataset|ds|set|data)s?$",),
            "regular expressions matched against the name a loop iterates over: a match makes the loop evaluation code",
        ),
    )
}


class OptionError(ValueError):
    """One invalid option; the message names the key (the caller adds the file)."""


def option(options: Mapping[str, Any], name: str) -> tuple[str, ...]:
    """A validated option's value, else its default."""
    return tuple(options.get(name, OPTIONS[name].default))


def validate(table: Mapping[str, Any], prefix: str = "rule-options") -> dict[str, tuple[str, ...]]:
    """``table`` checked against OPTIONS: a plain dict of tuples (hashable,
    picklable, cache-keyable) or OptionError for the first problem."""
    out: dict[str, tuple[str, ...]] = {}
    for key, value in table.items():
        if key not in OPTIONS:
            guess = difflib.get_close_matches(key.replace("_", "-"), list(OPTIONS), n=1)
            hint = f" (did you mean '{guess[0]}'?)" if guess else f" (known: {', '.join(sorted(OPTIONS))})"
            raise OptionError(f"unknown key '{prefix}.{key}'{hint}")
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise OptionError(f"'{prefix}.{key}' must be a list of regular expressions (strings), got {type(value).__name__} {value!r}")
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as e:
                raise OptionError(f"'{prefix}.{key}': invalid regular expression {pattern!r}: {e}") from None
        out[key] = tuple(value)
    return out
