"""Pure values and functions: wheel, target, profile, requiredby (who required what),
lockfile (its [tool.wh] in toolwh), plan, schedule. Imports only packaging and errors.
"""
