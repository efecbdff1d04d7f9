"""Placeholder: the cline importer is being written."""
