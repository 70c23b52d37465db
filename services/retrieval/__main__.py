"""Entry point: python -m services.retrieval."""

from services.retrieval.server import main

main()
