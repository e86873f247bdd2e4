"""Shell commands: the hooks' log line (logline), history files (history), attribution of a command to a
repository (attribution), the one node builder (node) and the collector (source)."""
