"""Placeholder: the goose importer is being written."""
