"""Git history: repository state (repo), commits (commits), per-file patches (diff), change words (changewords), the two collectors (source)."""
