"""Offline evaluation: golden data, dataset adapters, metrics with CIs (Wilson for proportions,
bootstrap otherwise), and reports."""
