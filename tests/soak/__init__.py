"""The fault suite (`make soak`): see suite.py."""
