"""Scheduling policies, one module each, behind the schedule() / update_from_output() contract.

A policy is one module here with a Scheduler subclass that sets `policy_name`; core/config.py
lists the names EngineConfig accepts and scheduler/make.py maps each to its class.
"""
