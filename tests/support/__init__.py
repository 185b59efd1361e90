"""Test doubles shared by the tests, the benchmarks and the harness's regression run.

- ``chat_model``: ``ScriptedChatModel``, a chat model replaying a script or a policy;
- ``policy``: the keyword companion policy and ``scripted_model``, the eval harness's
  regression run (not a score);
- ``fake_openai``: ``FakeOpenAIServer``, a scripted OpenAI-compatible server on loopback;
- ``naive_search``: the LIKE-scan baseline ``bench.recall`` measures memory search against;
- ``postgres``: ``PostgresServer``, a throwaway PostgreSQL (Debian's binaries) for the
  store's contract tests.

Nothing in the product packages imports this package (``tests/unit/test_scaffolding``).
"""
