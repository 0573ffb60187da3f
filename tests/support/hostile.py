"""What tests/hostile's cases share: a model outside the catalog and a few requests."""

from __future__ import annotations

# a model outside the catalog, described by its config.json values (core/model_spec.py)
HF = {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000}
FEW = {"synthetic": {"num_requests": 4, "request_rate": 5}}  # a workload that ends in moments
