"""Placeholder: the gemini_cli importer is being written."""
