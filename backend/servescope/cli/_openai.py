"""`servescope serve --openai`: vLLM's OpenAI-compatible API on live engines (api/openai/),
on the explorer's port and, with --replicas N --base-port P, on one port a replica."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from servescope.api.settings import Settings
from servescope.cli import CliError
from servescope.core.config import ROUTERS, ConfigError, EngineConfig


def add_openai_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("OpenAI-compatible API (--openai)",
                             "a live engine whose simulated time follows wall time")
    g.add_argument("--openai", action="store_true",
                   help="serve vLLM's OpenAI API (/v1/completions, /v1/chat/completions, "
                        "/v1/models, /health, /version, /metrics) on a live engine, watched "
                        "live in the explorer by the link printed at start")
    source = g.add_mutually_exclusive_group()
    source.add_argument("--config", type=Path, help="engine config JSON (as `sim --config`)")
    source.add_argument("--vllm-serve", metavar="LINE",
                        help="a `vllm serve MODEL --flags` line (as `import-vllm` reads it); "
                             "with --gpu to size its KV cache")
    g.add_argument("--gpu", default=None, metavar="NAME",
                   help="the GPU a --vllm-serve line runs on (the catalog's names: H100, "
                        "A100-80GB, L4, ...; as `import-vllm --gpu`)")
    g.add_argument("--replicas", type=int, default=None, metavar="N",
                   help="N replicas, replica k answering on --base-port + k")
    g.add_argument("--base-port", type=int, default=None, metavar="P",
                   help="the first replica's port (default: --port + 1)")
    g.add_argument("--router", choices=ROUTERS, default=None,
                   help="also answer the API on --port, routed over the replicas by this router")
    g.add_argument("--time-scale", type=float, default=1.0, metavar="X",
                   help="simulated seconds per wall second (default 1; otherwise every answer "
                        "carries X-ServeScope-Time-Scale)")
    g.add_argument("--tokenizer", type=Path, default=None, metavar="DIR",
                   help="a local Hugging Face tokenizer directory (tokenizer.json, "
                        "tokenizer_config.json) to count prompts and chat templates; without "
                        "it a prompt's tokens are estimated at 4 characters a token")
    g.add_argument("--served-model-name", default=None, metavar="NAME",
                   help="the model's name in the API (default: the config's model)")


def load_config(args: argparse.Namespace) -> EngineConfig:
    from servescope.cli._scenario import load_engine_args
    from servescope.core.resolve import resolve_fleet
    from servescope.vllm_import.args import VllmArgsError, import_text

    try:
        if args.vllm_serve:
            return import_text(args.vllm_serve, args.gpu).config
        if args.gpu:
            raise CliError("--gpu goes with --vllm-serve (a --config names its own gpu)")
        if args.config is None:
            raise CliError("--openai needs --config C.json or --vllm-serve 'vllm serve ...'")
        return resolve_fleet(load_engine_args(args.config).given)[0]
    except (ConfigError, VllmArgsError) as err:
        raise CliError(str(err)) from err


def model_name(args: argparse.Namespace, config: EngineConfig) -> str:
    if args.served_model_name:
        return str(args.served_model_name)
    if args.vllm_serve:
        words = [w for w in shlex.split(args.vllm_serve) if not w.startswith("-")]
        if words[:2] == ["vllm", "serve"] and len(words) > 2:
            return words[2]
    return str(config.model or "simulated")


def run_openai(args: argparse.Namespace, settings: Settings, explorer: object) -> int:
    from servescope.api.openai.app import openai_app
    from servescope.api.openai.live import LiveEngine
    from servescope.api.openai.metrics import LiveCollector
    from servescope.api.openai.replicas import Port, serve_all
    from servescope.api.openai.routing import RoutedPick
    from servescope.api.openai.serving import Served
    from servescope.api.openai.tokens import Tokens
    from servescope.cli._live import watch_live
    from servescope.core.routers.make import make_router

    if args.time_scale <= 0:
        raise CliError("--time-scale must be above 0")
    config = load_config(args)
    name = model_name(args, config)
    count = args.replicas or 1
    try:
        engines = [LiveEngine(config, args.time_scale) for _ in range(count)]
    except ConfigError as err:  # no cache size: a vllm serve line names no GPU, say
        raise CliError(f"{err} (--gpu NAME with --vllm-serve, or a config with model and "
                       "gpu, sizes it)") from err
    try:
        tokens = Tokens(args.tokenizer)
    except ImportError as err:
        raise CliError(f"--tokenizer needs Hugging Face `tokenizers` ({err})") from err
    except (OSError, ValueError) as err:  # no tokenizer.json there, or not one
        raise CliError(f"--tokenizer {args.tokenizer}: {err}") from err
    host = settings.host
    ports: list[Port] = []
    pick = None
    if args.router:
        pick = RoutedPick(engines, make_router(args.router, count, {}, 0, config.block_size))
    main = Served(engines, tokens, name, pick)
    wide = LiveCollector(engines, name, 0 if count > 1 else None)
    ports.append(Port(openai_app(main, wide, explorer, engines), host, settings.port))  # type: ignore[arg-type]
    watch_live(explorer, engines, settings)  # prints the explorer's links once it starts
    lines = []
    if count == 1 or args.router:
        lines.append(f"OpenAI API at http://{host}:{settings.port}/v1")
    base = args.base_port or settings.port + 1
    for k, live in enumerate(engines if count > 1 else ()):
        served = Served([live], tokens, name)
        ports.append(Port(openai_app(served, LiveCollector([live], name, None)), host, base + k))
        lines.append(f"replica {k} OpenAI API at http://{host}:{base + k}/v1")
    print("\n".join(lines), flush=True)
    serve_all(ports, engines, args.log_level)
    return 0
