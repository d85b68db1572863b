"""A cap on the jobs one client may have in Gradio's queue at once, so that one visitor cannot stall the others.

Gradio 6.31 runs each event's jobs one at a time by default and caps only the queue as a whole (``max_size``). A
fresh-user trial of the public server sent 40 concurrent paste parses from one client, each allowed its 5 s
budget: a normal parse sent 2 s later waited 45 s, and with the whole queue (64 jobs) it could wait minutes.
`install` refuses a client's job while that client already has ``per_client`` jobs waiting or running; the
refusal is Gradio's own "queue full" answer (HTTP 503, whose detail says why; the page shows Gradio's "This
application is currently busy"), so other visitors' jobs keep their place.

A client is its network address. Behind a proxy (a Hugging Face Space) every request comes from the proxy, and the
visitor's address is in ``X-Forwarded-For``, read when ``trust_forwarded`` (on a Space by default,
``--trust-forwarded-for`` elsewhere). Each proxy appends the address it was reached from, after whatever the
client sent: the left-most entries are the client's to write, so the visitor is the right-most entry that is not a
proxy's own (private, loopback or link-local) address (`forwarded_client`). A client that writes its own
``X-Forwarded-For`` is still counted under the address the proxy saw. Gradio has no hook for this, so `install`
wraps the queue's ``push`` (checked against gradio 6.31 by ``tests/playground/test_fairness.py`` and
``tests/playground/test_request_guards.py``).

Waiting jobs are served in turn. Gradio's queue is first come, first served: six addresses each keeping their 4
slow parses in flight (24 jobs of up to 5 s for 8 slots) made another visitor's 0.1 s paste wait 12-25 s (trial 15).
A job let in is moved ahead of every waiting job that is a later one of its own client (`_fair_place`): each
client's first waiting job comes before anyone's second, and so on, so a visitor with nothing running gets the next
free slot whoever else is waiting.

Answers never read count too. Gradio keeps each finished job's messages (its whole output) for its session until a
``/queue/data`` stream reads them; a client that joins and never reads piles them up without bound: trial 12's
follow-up joined 100 paste parses (0.46 MB answers) under one session hash without reading: 56 taken, +57 MB
kept. A finished job whose answer is unread still counts against its client, and a session whose answers have all
been unread for `UNREAD_TTL_S` has them dropped (a page reads its answers within milliseconds).

Sessions are counted too. Gradio keeps the state of at most ``--max-sessions`` sessions and evicts the oldest past
it, and a new session costs one cheap call: trial 14 made 1,000 sessions from one client in 190 s and every other
visitor's session was evicted (its run and conversation gone, its page still drawing them). With ``new_sessions``,
a client may start at most that many sessions (page loads, API clients) within ``window`` seconds; a session's
later jobs are never refused for this. One address then cannot reach the cap before the sessions' idle expiry
takes its oldest (public defaults: 60 per 10 minutes against 1,000 sessions kept 30 minutes).
"""

from __future__ import annotations

import time
from typing import Any

# A job older than this no longer counts against its client, whatever Gradio's bookkeeping says (so a job that
# Gradio never cleared cannot lock its client out for good); longer than any request budget or a public turn.
STALE_AFTER_S = 600.0
# A session whose jobs have all finished, with answers unread for this long, has its answers dropped.
UNREAD_TTL_S = 60.0
# A session with no job for this long is forgotten by the new-session count (a later job of it counts as new).
KNOWN_SESSION_S = 6 * 3600.0


def _address(entry: str) -> Any:
    """An ``X-Forwarded-For`` entry as an `ipaddress` address (a port or IPv6 brackets dropped); None if it is not
    an address (``unknown``, an obfuscated name, garbage)."""
    import ipaddress

    entry = entry.strip()
    if entry.startswith("["):  # [v6] or [v6]:port
        entry = entry[1:].split("]", 1)[0]
    elif entry.count(":") == 1:  # v4:port
        entry = entry.split(":", 1)[0]
    try:
        return ipaddress.ip_address(entry)
    except ValueError:
        return None


def forwarded_client(header: str) -> str | None:
    """The visitor's address in an ``X-Forwarded-For`` value written by proxies we trust.

    Each proxy appends the address it was reached from; anything before the first proxy's entry is what the client
    sent, so it is never believed while a later entry names a public address. Read from the right, entries that
    are not addresses and proxies' own (private, loopback, link-local, reserved) addresses are passed over; the
    first public address is the visitor. When there is none (a private network: the visitor is a private address
    too), the left-most address is.

    Returns the address as text (normalised, e.g. ``198.51.100.1``), or None when no entry is an address.
    """
    addresses = [a for a in map(_address, header.split(",")) if a is not None]
    for address in reversed(addresses):
        if address.is_global:
            return str(address)
    return str(addresses[0]) if addresses else None


def client_key(request: Any, trust_forwarded: bool) -> str | None:
    """The client a request comes from: the `forwarded_client` of its ``X-Forwarded-For`` when ``trust_forwarded``
    and the header names one, else the peer address; None when neither is known (such requests are not capped).

    Args:
        request: a Starlette/FastAPI request (anything with ``.headers`` and ``.client``).
        trust_forwarded: read ``X-Forwarded-For`` (only behind a proxy that sets it).
    """
    if request is None:
        return None
    if trust_forwarded:
        forwarded = request.headers.get("x-forwarded-for")
        if forwarded:
            client = forwarded_client(forwarded)
            if client:
                return client
    client = getattr(request, "client", None)
    return client.host if client is not None and client.host else None


def refusal_text(per_client: int) -> str:
    """What a refused client is told (the detail of the HTTP 503 answer, shown by the page)."""
    jobs = "job" if per_client == 1 else "jobs"
    return (f"This server runs at most {per_client} {jobs} at a time per visitor, and yours are still waiting or "
            f"running (or finished, with answers not yet read): wait for them to finish, then try again. To run "
            f"without this limit, run the playground on your own machine (python app.py).")


def session_refusal_text(new_sessions: int, window: float) -> str:
    """What a client refused a new session is told (``new_sessions`` per ``window`` seconds)."""
    minutes = f"{window / 60:g} minutes" if window >= 120 else f"{window:g} seconds"
    return (f"This server lets one visitor start at most {new_sessions} sessions (page loads or API clients) per "
            f"{minutes}, and yours reached it: use a page you already have open, or wait a few minutes. To run "
            f"without this limit, run the playground on your own machine (python app.py).")


def _fair_place(queue: Any, event_id: str, trust_forwarded: bool) -> int | None:
    """Move the waiting job ``event_id`` of ``queue`` (a gradio 6.31 queue) ahead of the waiting jobs of its event
    that are a later job of their own client than it is of its client, but never ahead of a waiting job of its own
    client: a job's turn is how many jobs its client has running or waiting before it. Returns its new place among
    the waiting jobs, or None when it is not waiting (run at once, or unknown)."""
    event = queue.event_ids_to_events.get(event_id)
    line = getattr(queue, "event_queue_per_concurrency_id", {}).get(getattr(event, "concurrency_id", None))
    if line is None or not line.queue or line.queue[-1] is not event:
        return None
    waiting_ids = {e._id for q in queue.event_queue_per_concurrency_id.values() for e in q.queue}
    ahead: dict[Any, int] = {}  # client -> its jobs running, then those waiting before the one looked at
    for other in list(queue.event_ids_to_events.values()):
        if other._id not in waiting_ids:
            key = client_key(other.request, trust_forwarded)
            ahead[key] = ahead.get(key, 0) + 1
    waiting = line.queue[:-1]
    mine = client_key(event.request, trust_forwarded)
    turns = []
    after = 0  # never before its client's own waiting jobs: a client's jobs run in the order it sent them
    for i, other in enumerate(waiting):
        key = client_key(other.request, trust_forwarded)
        turns.append(ahead.get(key, 0))
        ahead[key] = ahead.get(key, 0) + 1
        if key == mine:
            after = i + 1
    own = ahead.get(mine, 0)
    # (the turns of the jobs already waiting fall as their clients' jobs finish, in any line, so the line is not
    # sorted by turn: a job placed only by turn could pass one of its own client's)
    place = next((i for i in range(after, len(waiting)) if turns[i] > own), len(waiting))
    if place < len(waiting):
        line.queue.pop()
        line.queue.insert(place, event)
    return place


def install(demo: Any, per_client: int | None, trust_forwarded: bool, new_sessions: int | None = None,
            window: float = 600.0) -> None:
    """Cap the jobs each client may have waiting or running in ``demo``'s queue at ``per_client`` (None: no cap),
    and the sessions it may start at ``new_sessions`` per ``window`` seconds (None: no cap).

    Call after ``demo.queue(...)`` and before ``demo.launch``.

    Raises:
        RuntimeError: ``demo`` has no queue yet (``demo.queue`` was not called).
    """
    if per_client is None and new_sessions is None:
        return
    queue = getattr(demo, "_queue", None)
    if queue is None or not hasattr(queue, "event_ids_to_events"):
        raise RuntimeError("fairness.install needs demo.queue(...) first (a gradio 6.31 queue)")
    original = queue.push
    owners: dict[str, str] = {}  # session -> the client that joined its jobs (while it has answers pending)
    unread_since: dict[str, float] = {}  # session -> since when it has had answers unread
    known: dict[str, float] = {}  # session -> its last job let in (sessions already started)
    started: dict[str, list[float]] = {}  # client -> when the sessions it started within the window started
    pruned = [0.0]

    def new_session_refused(key: str, session: str, now: float) -> bool:
        """Whether ``session`` would be one more new session than ``key`` may start in the window."""
        if now - pruned[0] > 60.0:  # forget idle sessions and empty windows (bounded work, once a minute)
            pruned[0] = now
            for s in [s for s, t in known.items() if now - t > KNOWN_SESSION_S]:
                del known[s]
            for k in list(started):
                started[k] = [t for t in started[k] if now - t < window]
                if not started[k]:
                    del started[k]
        if session in known:
            return False
        times = started.get(key)
        if times:
            times[:] = [t for t in times if now - t < window]
        return bool(times) and len(times) >= new_sessions

    def unread_per_client(now: float) -> dict[str, int]:
        """Finished jobs with unread answers per client; drops the answers of sessions unread `UNREAD_TTL_S`."""
        counts: dict[str, int] = {}
        running = queue.event_ids_to_events
        for session, ids in list(queue.pending_event_ids_session.items()):
            finished = sum(1 for event_id in list(ids) if event_id not in running)
            if not finished:
                unread_since.pop(session, None)
                continue
            since = unread_since.setdefault(session, now)
            if finished == len(ids) and now - since > UNREAD_TTL_S:
                queue.pending_event_ids_session.pop(session, None)
                queue.pending_messages_per_session.pop(session, None)
                unread_since.pop(session, None)
                continue
            owner = owners.get(session)
            if owner is not None:
                counts[owner] = counts.get(owner, 0) + finished
        for session in [s for s in owners if s not in queue.pending_event_ids_session]:
            del owners[session]
        for session in [s for s in unread_since if s not in queue.pending_event_ids_session]:
            del unread_since[session]
        return counts

    async def push(body: Any, request: Any, username: str | None):
        key = client_key(request, trust_forwarded)
        now = time.monotonic()
        unread = unread_per_client(now)
        session = getattr(body, "session_hash", None)
        if key is not None and per_client is not None:
            busy = sum(1 for event in list(queue.event_ids_to_events.values())
                       if now - event.enqueue_time < STALE_AFTER_S
                       and client_key(event.request, trust_forwarded) == key)
            if busy + unread.get(key, 0) >= per_client:
                return False, refusal_text(per_client), "queue_full"
        if key is not None and session and new_sessions is not None and new_session_refused(key, session, now):
            return False, session_refusal_text(new_sessions, window), "queue_full"
        result = await original(body, request, username)
        if result[0] and isinstance(result[1], str):
            place = _fair_place(queue, result[1], trust_forwarded)
            if place is not None and hasattr(queue, "broadcast_estimations"):
                # the places from the job's new one on changed: tell those jobs (Gradio told the job the last place)
                queue.broadcast_estimations(queue.event_ids_to_events[result[1]].concurrency_id, place)
        if key is not None and result[0] and session:
            owners[session] = key
            if new_sessions is not None:
                if session not in known:
                    started.setdefault(key, []).append(now)
                known[session] = now
        return result

    queue.push = push
