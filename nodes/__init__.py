"""Node types: one module per node type (or per family sharing its maths), each a complete file.

Importing this package imports every module in it, and each registers its node types in
``animgraph.node.REGISTRY``: a new node is one new file here (plus its test), with no list
to extend anywhere else.
"""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")
