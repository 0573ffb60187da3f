"""Scheduling policies, one module each, behind the schedule() / update_from_output() contract.

A policy is one module here with a Scheduler subclass that sets `policy_name` (and
`policy_rank`, its place in lists): the registry finds it, and EngineConfig accepts its name.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from servescope.core.scheduler.base import Scheduler


@cache
def policy_classes() -> dict[str, type[Scheduler]]:
    """{policy name: scheduler class}, in `policy_rank` order."""
    from servescope.core.scheduler.base import Scheduler

    found: list[type[Scheduler]] = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        found += [cls for _, cls in inspect.getmembers(module, inspect.isclass)
                  if issubclass(cls, Scheduler) and cls.__module__ == module.__name__
                  and cls.policy_name]
    found.sort(key=lambda cls: (cls.policy_rank, cls.policy_name))
    return {cls.policy_name: cls for cls in found}


def policy_names() -> tuple[str, ...]:
    return tuple(policy_classes())
