"""Root conftest: helpers live in tests/support (on pythonpath via pyproject)."""
