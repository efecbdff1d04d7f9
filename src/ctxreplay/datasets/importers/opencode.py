"""Placeholder: the opencode importer is being written."""
