"""Undo and redo of a document as whole states: its JSON text, and the file its relative asset paths are anchored to.

A state is a few kB of text at these sizes, so whole states are kept rather than
inverse operations: restoring one is exact by construction.  Each state has a number, so
the document knows whether it is back at the state last saved (``saved``).
"""

from __future__ import annotations


class History:
    """The undo and redo stacks of ``(state number, JSON text, anchor file)`` and the current state's number."""

    def __init__(self, saved=True):
        self.state = 0  # number of the current state
        self.saved = 0 if saved else None  # number of the state last opened or saved (None: never)
        self._made = 1
        self._undo, self._redo = [], []

    @property
    def can_undo(self):
        return bool(self._undo)

    @property
    def can_redo(self):
        return bool(self._redo)

    @property
    def dirty(self):
        return self.state != self.saved

    def record(self, text, anchor):
        """A new state follows the current one (``text``, ``anchor``): one undo step; the redo stack is cleared."""
        self._undo.append((self.state, text, anchor))
        self._redo.clear()
        self.state, self._made = self._made, self._made + 1

    def undo(self, text, anchor):
        """(text, anchor) of the state before the current one (``text``, ``anchor``), or None at the start."""
        return self._step(self._undo, self._redo, text, anchor)

    def redo(self, text, anchor):
        """(text, anchor) of the state last undone, or None if there is none."""
        return self._step(self._redo, self._undo, text, anchor)

    def _step(self, source, target, text, anchor):
        if not source:
            return None
        target.append((self.state, text, anchor))
        self.state, text, anchor = source.pop()
        return text, anchor

    def mark_saved(self):
        self.saved = self.state

    def __len__(self):
        """Steps that can be undone."""
        return len(self._undo)
