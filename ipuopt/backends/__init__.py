"""Solver plumbing shared by every problem: CP-SAT parameters and callbacks, PuLP backends."""
