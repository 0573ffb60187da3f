"""`servescope sim` for a P/D fleet (core/pd_config.py): a config with `prefill` or `decode`,
or --prefill-replicas / --decode-replicas over a plain config; prints the P/D summary."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from servescope.cli import CliError
from servescope.cli._scenario import load_workload, print_effective, read_json, write_summary
from servescope.cli._trace import load_trace
from servescope.core.config_error import ConfigError
from servescope.core.kv_link import LINK_KINDS
from servescope.core.pd_config import PD_KEYS, is_pd, pd_fleet_from, pool_configs
from servescope.core.pd_events import PoolStep
from servescope.traces.recording import header, write_recording
from servescope.vllm_import.engine_config import load_engine_config


def add_pd_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("P/D disaggregation (a prefill and a decode pool, "
                                      "docs/pd.md)")
    group.add_argument("--prefill-replicas", type=int, metavar="P",
                       help="P prefill replicas (the config's prefill.replicas), each from the "
                            "top-level config; the summary gains `pools`, `kv_transfer` and "
                            "`ttft_parts`, and --out holds decode replica 0's records")
    group.add_argument("--decode-replicas", type=int, metavar="D",
                       help="D decode replicas (the config's decode.replicas)")
    group.add_argument("--kv-link", choices=tuple(LINK_KINDS), metavar="KIND",
                       help="the link that carries the KV handoff (kv_link.kind): "
                            + ", ".join(LINK_KINDS) + " (default infiniband)")


def wants_pd(args: argparse.Namespace, data: Any) -> bool:
    flags = (args.prefill_replicas, args.decode_replicas, args.kv_link)
    return any(flag is not None for flag in flags) or (isinstance(data, dict) and is_pd(data))


def pd_given(args: argparse.Namespace, data: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """The config file's P/D config with the flags over it, and what its top level loaded as
    (vLLM's argument names read, the unmodelled ones noted)."""
    if args.replicas is not None or args.router is not None or args.router_config is not None:
        raise CliError("a P/D fleet's pools take their replicas and router from the config's "
                       "prefill and decode objects (or --prefill-replicas/--decode-replicas)")
    top = {k: v for k, v in data.items() if k not in PD_KEYS}
    if args.model_config is not None:
        top["model_config"] = read_json(args.model_config)
    if args.speculative_config is not None:
        raise CliError("--speculative-config: a P/D pool decodes without speculative decoding")
    loaded = load_engine_config(top)
    given = {**loaded.given, **{k: data[k] for k in PD_KEYS if k in data}}
    for pool, count in (("prefill", args.prefill_replicas), ("decode", args.decode_replicas)):
        if count is not None:
            given[pool] = {**(given.get(pool) or {}), "replicas": count}
    if args.kv_link is not None:
        given["kv_link"] = {**(given.get("kv_link") or {}), "kind": args.kv_link}
    return given, loaded


def run_pd(args: argparse.Namespace, data: dict[str, Any]) -> int:
    specs = load_trace(args)[0] if args.trace else load_workload(args.workload)
    try:
        given, loaded = pd_given(args, data)
        pools = pool_configs(given)
        for pool, configs in pools.items():
            print_effective(configs[0], f" ({pool}, {len(configs)} replicas)")
        fleet = pd_fleet_from(given, specs, records=args.out is not None)
        if args.out is not None:  # as a fleet's --out: the first (decode) replica's records
            write_recording(args.out, header(pools["decode"][0], specs, "simulated"),
                            (e.record for e in fleet.run() if isinstance(e, PoolStep)
                             and e.pool == "decode" and e.replica == 0))
        else:
            fleet.run_to_end()
    except ConfigError as err:
        raise CliError(f"{args.config}: {err}") from err
    for sentence in loaded.not_modelled:
        print(f"note: {sentence}", file=sys.stderr)
    summary = fleet.summary()
    write_summary(args.summary, summary)
    return 0
