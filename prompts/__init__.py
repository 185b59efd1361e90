"""Prompt text as named templates and the functions that fill them: personas, the
procedural block, tool awareness, the command protocol. Imports nothing else from
Companion."""
