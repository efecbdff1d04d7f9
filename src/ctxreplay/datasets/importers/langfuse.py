"""Placeholder: the langfuse importer is being written."""
