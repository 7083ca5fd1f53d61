"""What the operator tells about itself: JSON log lines (``logs``), Prometheus metrics (``metrics``,
``framework_metrics``, ``user_metrics``, ``metrics_tls``), OpenTelemetry spans (``tracing``),
Kubernetes Events (``recorder``), and the observers of each run (``run_observers``).
"""
