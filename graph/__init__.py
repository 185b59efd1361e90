"""LangGraph core: state, runtime context, model providers, routing and guards, builder."""
