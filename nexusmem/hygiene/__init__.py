"""Memory hygiene: forget (deny-list, tombstones, deleting for good), scrub, stale, review, mark-stale."""
