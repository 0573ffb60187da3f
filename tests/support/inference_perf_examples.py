"""Configs in the shapes of inference-perf's own examples (examples/vllm/config-*.yml and
demos/kubecon-na-2025/config.yaml in kubernetes-sigs/inference-perf), written for these tests:
the sections and keys those files use, with our own values where theirs do not matter."""

SERVER = """\
api:
  type: completion
server:
  type: vllm
  model_name: some-org/some-model
  base_url: http://0.0.0.0:8000
  ignore_eos: true
tokenizer:
  pretrained_model_name_or_path: some-org/some-model
metrics:
  type: prometheus
  prometheus:
    url: http://localhost:9090
    scrape_interval: 15
report:
  request_lifecycle:
    summary: true
    per_stage: true
    per_request: true
"""

TWO_STAGES = """\
load:
  type: constant
  interval: 15
  stages:
  - rate: 1
    duration: 30
  - rate: 2
    duration: 30
"""  # 1 req/s, then 2 req/s, 15 s apart

SHARED_PREFIX = TWO_STAGES + SERVER + """\
data:
  type: shared_prefix
  shared_prefix:
    num_unique_system_prompts: 10
    num_users_per_system_prompt: 10
    system_prompt_len: 100
    question_len: 50
    output_len: 50
"""

SHARED_PREFIX_DISTRIBUTIONS = TWO_STAGES + SERVER + """\
data:
  type: shared_prefix
  shared_prefix:
    seed: 7
    num_unique_system_prompts: 10
    num_users_per_system_prompt: 10
    system_prompt_len: 100
    question_len:
      type: skew_normal
      mean: 200
      std_dev: 80
      skew: 2.5
      min: 10
      max: 2000
    output_len:
      type: lognormal
      mean: 150
      std_dev: 60
      min: 1
      max: 4096
"""

SHARED_PREFIX_MULTI_TURN = """\
load:
  type: constant
  num_workers: 2
  worker_max_concurrency: 10
  stages:
  - rate: 20
    duration: 5
""" + SERVER + """\
data:
  type: shared_prefix
  shared_prefix:
    num_unique_system_prompts: 2
    num_users_per_system_prompt: 10
    system_prompt_len: 100
    question_len: 50
    output_len: 50
    enable_multi_turn_chat: true
"""

RANDOM = """\
load:
  type: constant
  stages:
  - rate: 1
    duration: 30
""" + SERVER + """\
data:
  type: random
  input_distribution:
    min: 10
    max: 100
    mean: 50
    std_dev: 10
  output_distribution:
    min: 10
    max: 100
    mean: 50
    std_dev: 10
"""

SYNTHETIC = RANDOM.replace("type: random", "type: synthetic").replace(
    "  type: constant\n", "  type: constant\n  interval: 15\n")

KUBECON = """\
api:
  type: completion
  streaming: true
data:
  type: shared_prefix
  shared_prefix:
    num_unique_system_prompts: 10
    num_users_per_system_prompt: 10
    system_prompt_len: 128
    question_len: 64
    output_len: 64
load:
  type: constant
  interval: 1.0
  sweep:
    type: linear
    timeout: 180
    num_stages: 7
    stage_duration: 60
  num_workers: 44
  worker_max_concurrency: 10
  worker_max_tcp_connections: 2500
metrics:
  prometheus:
    filters:
    - namespace="test-ns"
    google_managed: true
    scrape_interval: 15
  type: prometheus
report:
  request_lifecycle:
    summary: true
    per_stage: true
    per_request: true
  prometheus:
    summary: true
    per_stage: true
storage:
  google_cloud_storage:
    bucket_name: a-bucket
server:
  base_url: http://vllm-service.test-ns.svc.cluster.local:8000
  ignore_eos: true
  model_name: some-org/some-model
  type: vllm
tokenizer:
  pretrained_model_name_or_path: some-org/some-model
"""
