"""Shipped graphs: JSON files runnable with ``animgraph run``."""
