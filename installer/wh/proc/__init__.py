"""The operating system at wh's edge: subprocesses and their lifetime, cores, Windows calls,
retried renames.
"""
