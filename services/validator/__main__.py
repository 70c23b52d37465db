"""Entry point: python -m services.validator."""

from services.validator.server import main

main()
