"""Sweeps: many phases x specs x solvers, on the local cores or a Dask cluster, resumable,
with a report and a diff between two sweeps."""
