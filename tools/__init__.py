"""The tools the model can call, one per module, declared in ``tools.registry`` (schemas,
validation, time limits, errors as data). Imports config, memory and prompts only."""
