"""What ServeScope knows about `vllm serve` flags (vLLM 0.33): which set scheduling fields,
which change behaviour the simulator does not model, and which have no effect on scheduling."""

from __future__ import annotations

SCHEDULING = {  # vLLM engine arg -> (EngineConfig field, type)
    "max_num_seqs": ("max_num_seqs", "int"),
    "max_num_batched_tokens": ("max_num_batched_tokens", "int"),
    "block_size": ("block_size", "int"),
    "enable_chunked_prefill": ("enable_chunked_prefill", "bool"),
    "enable_prefix_caching": ("enable_prefix_caching", "bool"),
    "long_prefill_token_threshold": ("long_prefill_token_threshold", "int"),
    "max_model_len": ("max_model_len", "int"),
    "num_gpu_blocks_override": ("num_gpu_blocks", "int"),
    "gpu_memory_utilization": ("gpu_memory_utilization", "float"),
    "tensor_parallel_size": ("tensor_parallel_size", "int"),
    "data_parallel_size": ("data_parallel_size", "int"),
    "dtype": ("dtype", "str"),
    "quantization": ("quantization", "str"),
    "kv_cache_dtype": ("kv_cache_dtype", "str"),
    "scheduling_policy": ("scheduling_policy", "str"),
    "async_scheduling": ("async_scheduling", "bool"),
    "model": ("model", "str"),
    "speculative_config": ("speculative_config", "json"),
}
NOT_MODELLED = {  # flags that change scheduling or memory in ways the simulator does not model
    "pipeline_parallel_size": "pipeline_parallel",
    "speculative_model": "speculative_decoding",
    "num_speculative_tokens": "speculative_decoding", "enable_lora": "lora", "max_loras": "lora",
    "max_lora_rank": "lora", "max_cpu_loras": "lora", "max_num_partial_prefills": None,
    "max_long_partial_prefills": None, "cpu_offload_gb": "cpu_offload", "swap_space": "cpu_offload",
    "kv_transfer_config": "kv_offload", "preemption_mode": None,
    "num_scheduler_steps": "multi_step", "scheduler_cls": None, "kv_cache_memory_bytes": None,
    "enable_expert_parallel": None, "limit_mm_per_prompt": "multimodal", "task": "pooling",
    "runner": "pooling", "enable_prompt_embeds": "prompt_embeds", "scheduler_delay_factor": None,
    "disable_hybrid_kv_cache_manager": None, "max_num_encoder_input_tokens": None,
    "kv_offloading_size": "kv_offload", "kv_offloading_backend": "kv_offload",
    "cpu_kv_offload": "kv_offload", "lora_modules": "lora",
}
NO_EFFECT = {  # flags known to have no effect on scheduling decisions
    "host", "port", "api_key", "served_model_name", "trust_remote_code", "download_dir",
    "tokenizer", "tokenizer_mode", "revision", "code_revision", "tokenizer_revision", "seed",
    "disable_log_requests", "enable_log_requests", "disable_log_stats", "uvicorn_log_level",
    "chat_template", "enable_auto_tool_choice", "tool_call_parser", "reasoning_parser",
    "load_format", "enforce_eager", "max_logprobs", "disable_frontend_multiprocessing",
    "allowed_origins", "allowed_methods", "allowed_headers", "ssl_keyfile", "ssl_certfile",
    "root_path", "middleware", "response_role", "guided_decoding_backend",
    "structured_outputs_config", "distributed_executor_backend", "hf_token", "generation_config",
    "override_generation_config", "max_parallel_loading_workers", "compilation_config",
    "hf_overrides", "config_format", "worker_cls", "disable_custom_all_reduce",
    "otlp_traces_endpoint", "collect_detailed_traces", "enable_chunked_prefill_warning",
    "cuda_graph_sizes", "calculate_kv_scales", "hf_config_path", "chat_template_content_format",
}
BOOLEAN = {"enable_chunked_prefill", "enable_prefix_caching", "trust_remote_code", "enforce_eager",
           "enable_lora", "async_scheduling", "disable_log_requests", "disable_log_stats",
           "enable_log_requests", "enable_auto_tool_choice", "disable_frontend_multiprocessing",
           "enable_expert_parallel", "enable_prompt_embeds", "disable_custom_all_reduce",
           "calculate_kv_scales", "disable_hybrid_kv_cache_manager"}
ALIASES = {"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size", "q": "quantization",
           "dp": "data_parallel_size", "O": "compilation_config"}
