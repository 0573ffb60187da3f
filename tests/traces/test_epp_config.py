"""llm-d EndpointPickerConfig YAML into a router_config (traces/epp_config.py), in the layout
of llm-d-inference-scheduler's deploy/config samples, and the router it configures."""

import pytest

from servescope.core.config_error import ConfigError
from servescope.core.routers.llm_d import LlmDRouter
from servescope.traces.epp_config import read_router_config
from servescope.traces.errors import TraceFormatError

PRECISE = """\
apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
  - type: single-profile-handler
  - type: decode-filter
  - type: precise-prefix-cache-scorer
    parameters:
      tokenProcessorConfig:
        blockSize: 64
  - type: kv-cache-utilization-scorer
  - type: queue-scorer
    name: waiting
  - type: max-score-picker
schedulingProfiles:
  - name: default
    plugins:
      - pluginRef: decode-filter
      - pluginRef: precise-prefix-cache-scorer
        weight: 2.0
      - pluginRef: kv-cache-utilization-scorer
      - pluginRef: waiting
        weight: 1.5
      - pluginRef: max-score-picker
"""


def test_the_default_profile_becomes_the_routers_scorers(write):
    config = read_router_config(write("epp.yaml", PRECISE))
    router = LlmDRouter(2, config, 0, 16)
    assert router.profile == (("precise-prefix-cache-scorer", 2.0),
                              ("kv-cache-utilization-scorer", 1.0),  # no weight: 1
                              ("queue-scorer", 1.5))  # found by its name


def test_the_approximate_producers_parameters(write):
    text = PRECISE.replace("  - type: max-score-picker\n", "  - type: max-score-picker\n"
                           "  - type: approx-prefix-cache-producer\n    parameters:\n"
                           "      lruCapacityPerServer: 500\n      maxPrefixBlocksToMatch: 64\n")
    config = read_router_config(write("epp.yaml", text))
    assert (config["lru_capacity_per_server"], config["max_prefix_blocks"]) == (500, 64)


def test_not_an_endpoint_picker_config(write):
    with pytest.raises(TraceFormatError, match="kind"):
        read_router_config(write("x.yaml", "kind: Deployment\n"))
    with pytest.raises(TraceFormatError, match="schedulingProfiles"):
        read_router_config(write("x.yaml", "kind: EndpointPickerConfig\nplugins: []\n"))


def test_a_scorer_the_router_does_not_have_is_named(write):
    text = PRECISE.replace("- pluginRef: waiting", "- pluginRef: lora-affinity-scorer")
    with pytest.raises(ConfigError, match="lora-affinity-scorer"):
        LlmDRouter(2, read_router_config(write("epp.yaml", text)), 0, 16)
