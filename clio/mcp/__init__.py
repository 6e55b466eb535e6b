"""Model Context Protocol: clio as a client of other servers and as a server of its memory."""
