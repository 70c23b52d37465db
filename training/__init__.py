"""Training code for the models the services ship (kept apart from serving code)."""
