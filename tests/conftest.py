"""Root conftest: helpers live in tests/support (on pythonpath via pyproject)."""

from hypothesis import settings

# Tests hold on any machine: a loaded CI runner must not fail an example for taking longer than
# hypothesis's default 200 ms deadline (each test bounds its own work by its examples' sizes).
settings.register_profile("servescope", deadline=None)
settings.load_profile("servescope")
