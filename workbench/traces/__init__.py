"""Parquet trace tables: schemas, writer, importers, analysis, report."""
