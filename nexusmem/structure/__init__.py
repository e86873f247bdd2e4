"""Import structure: which tracked file imports which, for Python, JS/TS, Go, Rust and Java.

Parsing (nexusmem.structure.parse) turns one file's text into import specifiers; resolution
(nexusmem.structure.resolve) maps specifiers onto tracked files only; the pass (nexusmem.structure.scan)
re-parses only files whose blob changed and stores specifiers and edges through nexusmem.store.
"""
