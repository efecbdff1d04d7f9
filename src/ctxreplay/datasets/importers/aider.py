"""Placeholder: the aider importer is being written."""
