"""Carrying out an install: backends, staging, validation, ownership, the journal and rollback."""
