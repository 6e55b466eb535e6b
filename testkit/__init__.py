"""Test support shared by tests/ and benches/: the fake chat-completions server, the runner of the
installed clio, the real-model harness. Not shipped with clio."""
