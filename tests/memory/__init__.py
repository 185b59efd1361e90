"""Tests of memory/: the contract both backends keep (contract/), and what only one has."""
