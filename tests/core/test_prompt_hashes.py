"""A router's prompt hashes with the shared-prefix memo (core/routers/prompt_hashes.py) equal
core/prefix.py prompt_block_hashes computed afresh for each prompt, whichever came first."""

from servescope.core.prefix import prompt_block_hashes
from servescope.core.request import RequestSpec
from servescope.core.routers import prompt_hashes
from servescope.core.routers.prompt_hashes import PromptHashes

BS = 16


def spec(rid: str, prompt_len: int, prefix: tuple[tuple[str, int], ...]) -> RequestSpec:
    return RequestSpec(rid, prompt_len, 8, arrival_s=0.0, prefix=prefix)


def test_memo_gives_the_fresh_hashes_short_and_long_prompts_in_any_order():
    two = (("sys", 40), ("tool", 30))  # 70 shared tokens: blocks 0..3 wholly shared
    specs = [
        spec("a", 20, two),  # shorter than the prefix: one full block, clipped segments
        spec("b", 200, two),  # the memo grows to 4 shared blocks
        spec("c", 64, two),  # 64 tokens: 4 full blocks, all shared, none past the prefix
        spec("d", 70, two),  # the prefix exactly: block 4 is partial, not hashed
        spec("e", 90, (("sys", 40),)),  # another prefix: its own memo entry
        spec("f", 300, two),
        spec("g", 100, ()),  # no prefix: own blocks only
    ]
    memo = PromptHashes(BS)
    for s in specs + specs[::-1]:
        fresh = prompt_block_hashes(s, BS)
        assert memo.of(s) == fresh, s.id
        assert len(fresh) == s.prompt_len // BS
    # the shared blocks really are shared across prompts, the next ones are not
    b, f = memo.of(specs[1]), memo.of(specs[5])
    assert b[:4] == f[:4] and b[4] != f[4]


def test_memo_starting_over_when_full_keeps_the_hashes(monkeypatch):
    monkeypatch.setattr(prompt_hashes, "MAX_PREFIXES", 2)
    memo = PromptHashes(BS)
    specs = [spec(f"r{i}", 150, ((f"t{i % 3}", 48),)) for i in range(9)]
    for s in specs:
        assert memo.of(s) == prompt_block_hashes(s, BS)
        assert len(memo.shared) <= 2
