"""`python -m wh`: the wh command line."""

from wh.cli.main import main

main()
