"""The project's language layer: pure text functions with one definition each (issue 14).

``sentences``: what a sentence is, for the generator and the validator.
"""
