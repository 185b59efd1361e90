"""The Gradio app and the command-line entry point."""
