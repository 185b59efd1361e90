"""The top layer: the Gradio app (one module per tab, its security middleware), the
``companion`` command line (chat, user, db, eval, doctor, undo-sql, graph) and logging set-up."""
