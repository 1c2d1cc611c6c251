"""Pictures of schedules, program runs and arena placements: self-contained HTML pages
(canvas, zoom, hover details, no network) and PNG files through matplotlib."""
