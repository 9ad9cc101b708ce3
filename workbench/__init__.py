"""Question-guided kernel workbench."""
__version__ = "0.1.0"
