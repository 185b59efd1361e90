"""MCP tools: the servers the operator lists in ``COMPANION_HOME/mcp.json``.

``config`` reads the file, ``connection`` holds one server's session (the ``mcp`` SDK)
over ``stdio`` (a capped reader) or streamable HTTP and loads its tools through
``langchain-mcp-adapters``, ``specs`` turns those into registry entries, ``results``
bounds their answers and makes them tool results, ``servers`` runs a home's
servers on a thread of their own and ``names`` says how their tools are named. Nothing
here is imported by graph/ or nodes/: the registry (``tools.registry.home_registry``) is
where the tools join. See docs/tools.md.
"""
