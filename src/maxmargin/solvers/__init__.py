"""Optimisation engines: LP master, cutting planes, column generation."""
