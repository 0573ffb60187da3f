"""Capacity planning: simulate a grid of engine configs over one trace (points as Ray tasks),
judge each against SLOs, price it, and name the cheapest config that meets them."""
