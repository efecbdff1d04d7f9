"""Placeholder: the phoenix importer is being written."""
