"""ipuopt: exact models, honest lower bounds and fast fallbacks for IPU compiler problems."""

__version__ = "0.1.0"
