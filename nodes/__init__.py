"""Graph nodes, one per module: build_context, call_model, execute_tool."""
