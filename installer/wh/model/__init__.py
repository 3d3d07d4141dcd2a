"""Pure values and functions: wheel, target, profile, lockfile (its [tool.wh] in toolwh), plan,
schedule. Imports only packaging and errors.
"""
