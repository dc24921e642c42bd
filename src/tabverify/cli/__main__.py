"""``python -m tabverify.cli``: the command line."""

from tabverify.cli import main

main()
