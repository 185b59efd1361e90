"""The eval harness: scenario datasets, evaluators, runner and reports."""
