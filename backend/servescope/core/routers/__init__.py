"""A fleet's routers: one module a rule, named in make.py; base.py holds what they share."""
