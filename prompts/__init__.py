"""Prompt text as named templates: personas, the procedural block, the command protocol."""
