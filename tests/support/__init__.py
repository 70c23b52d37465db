"""Test support code shared across test packages (fake servers, builders)."""
