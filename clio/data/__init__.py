"""Static data shipped with clio: the distilled MiniLM token table and its tokenizer (see docs/memory.md)."""
