"""Whole programs: a run on the chip (`run`), placements judged by their schedules
(`reschedule`), plans ranked by their scheduled programs (`rerank`), everything chosen together
(`optimize`), and the engine that runs their independent cells here or on Dask (`cells`)."""
