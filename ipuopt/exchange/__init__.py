"""Exchange scheduling: phases, schedules, bounds, greedy/CP-SAT/MILP solvers, validator."""
