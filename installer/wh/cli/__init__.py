"""The command line: parses options, calls app, renders reports and errors. Nothing below it
prints.
"""
