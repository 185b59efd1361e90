"""The conversation graph and what runs it. Owns the turn's state (``state``) and events
(``events``), the runtime ``Context`` and its wiring from configuration (``setup``), the
command protocol (``commands``), the pure routers and guards (``routing``), the builder,
and the one turn path (``runner``). Imports config, memory, prompts, tools, providers
and nodes; never app or evals."""
