"""User-input errors: one clear line naming the file, node, port or line."""

import re

_BREAKS = re.compile(r"[\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def one_line(text):
    """``text`` with its line breaks escaped (``\\n``): a path or value from the input cannot break the line."""
    return _BREAKS.sub(lambda m: m[0].encode("unicode_escape").decode("ascii"), text)


class AnimgraphError(ValueError):
    """Base of the errors the CLI reports as one line with exit status 2 (a ValueError: bad input)."""


class GraphError(AnimgraphError):
    """A graph that cannot be loaded, checked or planned; names the file, node and port."""

    def __init__(self, message, node=None, port=None, file=None):
        self.message = message
        self.node = node
        self.port = port
        self.file = file
        super().__init__(message)

    def __str__(self):
        where = []
        if self.file:
            where.append(str(self.file))
        if self.node:
            where.append(f"node {self.node!r}" + (f" port {self.port!r}" if self.port else ""))
        return one_line((": ".join(where) + ": " if where else "") + self.message)


class BVHError(AnimgraphError):
    """A BVH file that cannot be read; names the file and line."""

    def __init__(self, message, file=None, line=None):
        self.message = message
        self.file = file
        self.line = line
        super().__init__(message)

    def __str__(self):
        where = str(self.file) if self.file else "<bvh>"
        if self.line:
            where += f":{self.line}"
        return one_line(f"{where}: {self.message}")
