"""One way to start the three services (and Redis) outside a deployment, in two modes.

- ``stack.inprocess``: validator, retrieval and synthesis as ``ServiceApp``s on this process's
  event loop, on free ports (integration tests, the evaluation harness).
- ``stack.processes``: Redis and the services as child processes (``python -m services.<name>``)
  on free ports, stopped with SIGTERM (load and stream benchmarks, process-level tests).
- ``stack.background`` (``python -m stack up|down``): the processes ``make run`` leaves running on
  the fixed ports, tracked by PID file, and ``make stop`` stops.

All three take their settings from ``stack.wiring``: the services in start order, the settings
each starts with (ports, addresses, index directory, Redis URL, overrides, grace), readiness
(gRPC health ``SERVING``) and shutdown. Serving code never imports this package.
"""
