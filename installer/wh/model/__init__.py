"""Pure values and functions: wheel, target, profile, lockfile, plan, schedule. Imports only
packaging and errors.
"""
