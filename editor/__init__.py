"""The dearpygui node editor (``animgraph edit``); needs the ``[editor]`` extra."""
