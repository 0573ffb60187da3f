"""Who may drive a session: its creator and whoever it handed the driver token to. Follow links
and bare session ids carry no token, so they only watch."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from typing import TYPE_CHECKING

from servescope.api.wire.protocol import Role

if TYPE_CHECKING:
    from servescope.api.sessions.session import Session


def holds_token(session: Session, token: str | None) -> bool:
    """Whether `token` is the session's driver token (compared in constant time)."""
    return bool(token) and secrets.compare_digest(session.token.encode(), (token or "").encode())


def role_for(session: Session, token: str | None, follow: bool, created: bool) -> Role:
    """`driver` for the connection that created the session or presents its token (and did not
    ask to follow); `follower` for everyone else."""
    if follow:
        return "follower"
    return "driver" if created or holds_token(session, token) else "follower"


def tokens_in(header: str | None) -> list[str]:
    """The driver tokens a REST caller presents: `X-Session-Token: T1, T2`."""
    return [t.strip() for t in (header or "").split(",") if t.strip()][:64]


def owned(sessions: Iterable[Session], tokens: list[str]) -> list[Session]:
    """The sessions whose driver token the caller holds (none without a token)."""
    return [s for s in sessions if any(holds_token(s, t) for t in tokens)]
