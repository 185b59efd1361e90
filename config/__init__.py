"""Configuration, the bottom layer: ``Settings`` resolved from flags, environment and the
profile table (``config.settings``). It imports nothing else from Companion."""
