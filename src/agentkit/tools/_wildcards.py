"""Wildcard matching without regular expressions, so it never backtracks exponentially.

Permission rules (`Bash(git *)`, `Read(src/**)`) and the `Glob` tool used to translate
wildcards into regular expressions. A pattern such as `*a*a*a*a*a*a*a*a*b` then backtracks
catastrophically inside `re`, which holds the GIL for the whole match, so one call could
freeze every run in the process. [`wildcard_match`][agentkit.tools._wildcards.wildcard_match]
is the classic greedy matcher that remembers only the last `*`: its time is at most
proportional to the pattern's length times the text's length.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["Token", "wildcard_match", "wildcard_tokens"]


class Wild(Enum):
    """The two wildcards: `*` (any run of characters) and `?` (any one character)."""

    STAR = "*"
    ANY = "?"


@dataclass(frozen=True)
class CharClass:
    """A `[...]` class: `chars` and inclusive `ranges`; `negate` for `[!...]`."""

    chars: frozenset[str]
    ranges: tuple[tuple[str, str], ...]
    negate: bool

    def accepts(self, ch: str) -> bool:
        """Whether the class matches the one character `ch`."""
        inside = ch in self.chars or any(lo <= ch <= hi for lo, hi in self.ranges)
        return inside != self.negate


Token = str | Wild | CharClass
"""One pattern element: a literal character, a wildcard, or a character class."""


def _char_class(body: str) -> CharClass:
    negate = body.startswith("!")
    if negate:
        body = body[1:]
    chars: set[str] = set()
    ranges: list[tuple[str, str]] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            ranges.append((body[i], body[i + 2]))  # a reversed range matches nothing
            i += 3
        else:
            chars.add(body[i])
            i += 1
    return CharClass(frozenset(chars), tuple(ranges), negate)


def wildcard_tokens(pattern: str, *, classes: bool) -> tuple[Token, ...]:
    """Split `pattern` into tokens.

    Args:
        pattern: The wildcard pattern.
        classes: Whether `?` and `[...]` are wildcards too (paths); when `False` only `*`
            is (commands), and every other character stands for itself.
    """
    tokens: list[Token] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            if not tokens or tokens[-1] is not Wild.STAR:  # `**` in a segment is one `*`
                tokens.append(Wild.STAR)
        elif classes and ch == "?":
            tokens.append(Wild.ANY)
        elif classes and ch == "[" and (end := pattern.find("]", i + 2)) != -1:
            tokens.append(_char_class(pattern[i + 1 : end]))
            i = end
        else:
            tokens.append(ch)
        i += 1
    return tuple(tokens)


def _accepts(token: Token, ch: str) -> bool:
    if isinstance(token, CharClass):
        return token.accepts(ch)
    return token is Wild.ANY or token == ch


def wildcard_match(tokens: tuple[Token, ...], text: str) -> bool:
    """Whether the whole of `text` matches `tokens`.

    On a mismatch the matcher returns to the last `*` and lets it take one more character;
    earlier stars never need revisiting, so the work is O(len(tokens) * len(text)).
    """
    t = p = 0
    star = -1  # index of the last `*` seen
    star_t = 0  # where the text stood when that star matched (plus what it took since)
    while t < len(text):
        if p < len(tokens) and tokens[p] is Wild.STAR:
            star, star_t = p, t
            p += 1
        elif p < len(tokens) and _accepts(tokens[p], text[t]):
            p += 1
            t += 1
        elif star >= 0:
            star_t += 1
            p, t = star + 1, star_t
        else:
            return False
    return all(token is Wild.STAR for token in tokens[p:])
