"""What the CLI's trace tests share: a small engine config and a four-request Azure trace."""

CONFIG = {"block_size": 8, "num_gpu_blocks": 200, "max_num_batched_tokens": 96}
# Azure 2023 columns; arrivals 0.0, 0.5, 1.25, 2.0 s after the first request.
AZURE = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,120,7
2023-11-16 18:15:47.1805900,40,3
2023-11-16 18:15:47.9305900,300,12
2023-11-16 18:15:48.6805900,64,5
"""
