"""Offline evaluation: golden data, dataset adapters, metrics with bootstrap CIs, and reports."""
