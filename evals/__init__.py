"""The eval harness: it owns the scenario datasets (with paraphrases), the local stand-ins
for the outside world (``fixtures``), the evaluators and judge, the runner that drives a
model under test through the real graph, and the reports. It sits on top, beside app/."""
