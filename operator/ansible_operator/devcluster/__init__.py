"""A real Kubernetes control plane on loopback for development and tests, without Docker."""
