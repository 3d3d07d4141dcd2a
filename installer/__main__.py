"""`python -m installer`: the wh command line."""

from installer.cli import main

main()
