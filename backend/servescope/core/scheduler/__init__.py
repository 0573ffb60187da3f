"""Scheduling policies, one module each, behind the schedule() / update_from_output() contract."""
