"""``python -m stack up|down``: the stack ``make run`` starts and ``make stop`` stops."""

from stack.background import main

main()
