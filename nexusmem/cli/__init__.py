"""The command line: thin click commands over the library, one module per group of commands."""
