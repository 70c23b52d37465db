"""Entry point: python -m services.synthesis."""

from services.synthesis.server import main

main()
