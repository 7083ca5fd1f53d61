"""Talking to the Kubernetes API: credentials and a small async client."""
