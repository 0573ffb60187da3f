"""What tests/hostile's cases share: a model outside the catalog and a few requests."""

from __future__ import annotations

# a model outside the catalog, described by its config.json values (core/model_spec.py): Llama
# 3.1 8B's geometry, so an H100 sizes its pool under the server's block cap (a tiny model would
# leave millions of blocks, refused as over max_gpu_blocks)
HF = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
      "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}
FEW = {"synthetic": {"num_requests": 4, "request_rate": 5}}  # a workload that ends in moments
