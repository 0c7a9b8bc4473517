"""Exit words: the moves of the Memento memory between neighbouring necklaces of a Gray chain (paper Definition 4.1 (iii), appendix D.3).

On the Memento memory the agent remembers its last ``m`` arms, oldest
first.  Playing the oldest arm ``w[0]`` rotates the word inside its
necklace; playing the other arm at an *exit word* moves it to the
neighbouring necklace of the chain.  :func:`exits` lists, for every necklace
of a chain, its exit words toward each end, preferred first (the first is
the one the necklace policy uses); :func:`exit_table` gives the chosen ones
as ``(word, arm)`` pairs, in the convention of the published code.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from .gray import GrayChain
from .words import check_chain, complement, necklace, rotations

__all__ = ["Exit", "ExitWords", "exit_table", "exits"]


@attrs.frozen
class Exit:
    """A move between neighbouring necklaces of a chain.

    Attributes:
        word: the memory word, oldest arm first, a rotation of the necklace left.
        arm: the arm to play, ``!= word[0]``; the new word is ``word[1:] + arm``.
        target: index in the chain of the necklace reached.
    """

    word: str
    arm: str
    target: int

    @property
    def result(self) -> str:
        """The memory word after the move."""
        return self.word[1:] + self.arm


@attrs.frozen
class ExitWords:
    """The exits of necklace ``index`` of a chain.

    Attributes:
        index: position in the chain (0 is ``A^m``).
        necklace: its representative.
        left: every exit toward ``index - 1`` (toward ``A^m``), sorted by preference.
        right: every exit toward ``index + 1`` (toward ``B^m``), sorted by preference.
    """

    index: int
    necklace: str
    left: tuple[Exit, ...]
    right: tuple[Exit, ...]

    @property
    def left_exit(self) -> Exit | None:
        """The chosen exit toward ``A^m`` (``None`` for ``A^m``)."""
        return self.left[0] if self.left else None

    @property
    def right_exit(self) -> Exit | None:
        """The chosen exit toward ``B^m`` (``None`` for ``B^m``)."""
        return self.right[0] if self.right else None


def _exits_between(source: str, target: str, target_index: int) -> tuple[Exit, ...]:
    """Words of ``source`` whose move (flip the oldest letter, append it) lands in necklace ``target``, by preference.

    Preference: the second-oldest letter equals the arm played (the new word
    then starts and ends with that arm), then the smallest word when moving
    toward ``A^m`` (arm ``A``) and the largest when moving toward ``B^m``,
    i.e. the smallest complemented word, so that complement-symmetric chains
    get complement-symmetric exits.
    """
    found = []
    for w in rotations(source):
        arm = complement(w[0])  # the other arm
        if necklace(w[1:] + arm) == target:
            found.append(Exit(word=w, arm=arm, target=target_index))

    def preference(e: Exit) -> tuple[bool, str]:
        second_is_arm = len(e.word) > 1 and e.word[1] == e.arm
        key = e.word if e.arm == "A" else complement(e.word)
        return (not second_is_arm, key)

    return tuple(sorted(found, key=preference))


def exits(chain: GrayChain | Sequence[str]) -> tuple[ExitWords, ...]:
    """The exit words of every necklace of a Gray chain (paper Definition 4.1 (iii), Figure 3).

    On the Memento memory the word ``w`` holds the last ``m`` arms, oldest
    first.  Playing ``w[0]`` rotates ``w`` inside its necklace; playing the
    other arm ``x`` gives ``w[1:] + x``, a word with the oldest letter
    flipped, hence of an adjacent necklace.  For each necklace ``i`` this lists
    the words ``w`` (rotations of ``chain[i]``) whose move lands in
    ``chain[i - 1]`` (``left``) or ``chain[i + 1]`` (``right``), with the
    arm to play.  The end necklaces have one exit each (``A^m`` right with
    ``B``, ``B^m`` left with ``A``: the ``eps0`` moves).

    Each list is sorted by preference and its first element is *the* exit used
    by the policy (:attr:`ExitWords.left_exit`, ``right_exit``):

    1. prefer a word whose second-oldest letter is the arm played;
    2. then the smallest word for exits toward ``A^m``, the largest for exits
       toward ``B^m`` (complement-symmetric: the exits of a symmetric chain
       are the complements of each other).

    This rule reproduces the exits of the published code for ``m = 3``
    (``BAA`` A, ``ABA`` B, ``BAB`` A, ``ABB`` B) and ``m = 4`` (``BAAA`` A,
    ``ABAA`` B, ``BAAB`` A, ``ABBA`` B, ``BABB`` A, ``ABBB`` B).

    Raises:
        TypeError, ValueError: if ``chain`` is not a valid Gray chain (:func:`~policies.necklaces.check_chain`).
    """
    reps = check_chain(chain)
    out = []
    for i, w in enumerate(reps):
        left = _exits_between(w, reps[i - 1], i - 1) if i > 0 else ()
        right = _exits_between(w, reps[i + 1], i + 1) if i + 1 < len(reps) else ()
        out.append(ExitWords(index=i, necklace=w, left=left, right=right))
    return tuple(out)


def exit_table(chain: GrayChain | Sequence[str], ends: bool = False) -> tuple[tuple[str, str], ...]:
    """The chosen exits as ``(word, arm)`` pairs: for each necklace in chain order, left exit then right exit.

    With ``ends=False`` (default) only the inner necklaces are listed, the
    convention of the published code: for ``m = 3`` and the chain
    ``AAA, AAB, ABB, BBB`` this is
    ``(('BAA', 'A'), ('ABA', 'B'), ('BAB', 'A'), ('ABB', 'B'))``.
    """
    table = exits(chain)
    if not ends:
        table = table[1:-1]
    pairs = []
    for item in table:
        for e in (item.left_exit, item.right_exit):
            if e is not None:
                pairs.append((e.word, e.arm))
    return tuple(pairs)
