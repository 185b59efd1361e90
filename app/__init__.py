"""The top layer: the Gradio app (one module per tab, its security middleware), the
``companion`` command line (chat, eval, doctor, undo-sql, graph) and logging set-up."""
