"""One use case per command: ties the layers below into lock, install, verify, fetch, bundle and
why.
"""
