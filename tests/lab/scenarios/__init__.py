"""Scenario warehouses for the lab (see generate.py)."""
