"""Placeholder: the langsmith importer is being written."""
