"""Collectors: each turns one kind of raw history into Nodes (scan → nodes). They never touch SQL."""
