"""clio: a terminal coding agent with built-in memory."""

__version__ = "0.1.0"
