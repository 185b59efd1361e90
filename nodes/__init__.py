"""Graph nodes, one per module: build_context, call_model, execute_tool. Each is an async
function over the turn's state and the runtime context, returning only the keys it
changes; they read and write history through the store, never hold it."""
