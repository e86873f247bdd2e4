"""Install, remove and report the shell prompt hooks and git hooks (marker blocks, idempotent)."""
