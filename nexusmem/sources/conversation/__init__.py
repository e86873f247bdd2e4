"""The coding agents' transcripts (Claude Code, Codex CLI, Aider, Gemini CLI): one parser module per agent."""
