"""Tools the model can call, declared in tools.registry."""
