"""The revisions, oldest first: ``v0001_initial``, ..."""
