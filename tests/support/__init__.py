"""Helpers shared by tests: factories and reference-trace loading (on pythonpath via pytest)."""
