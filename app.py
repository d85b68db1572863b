"""Response Template Playground: `python app.py [--model ID_OR_PATH] [--host HOST] [--port PORT]
[--remote NAME=URL[,model=M][,tokenizer=T][,key_env=VAR] ...] [--allow-any-remote]`.

Starts the Gradio 6 app (see playground/ui.py).  With no --model it loads a hub
model on CUDA machines, else the built-in model, else a tiny local one.
"""

from __future__ import annotations

try:  # ZeroGPU: `spaces` (installed only on Spaces) must be imported before anything initialises CUDA
    import spaces  # noqa: F401
except ImportError:
    spaces = None

import argparse
import os


def parse_args(argv=None) -> argparse.Namespace:
    """Command-line flags (see --help)."""
    p = argparse.ArgumentParser(description="Response Template Playground")
    p.add_argument("--model", default=None, help="hub id or local folder (default: built-in / GPU default)")
    p.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    p.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    p.add_argument("--trust-remote-code", action="store_true", help="allow models with custom code (off by default)")
    p.add_argument("--no-preload", action="store_true", help="do not load the model before the page opens")
    p.add_argument("--concurrency", type=int, default=8, help="jobs running at once across users")
    from playground.limits import add_arguments

    add_arguments(p)
    p.add_argument("--remote", action="append", default=[], metavar="NAME=URL[,model=M][,tokenizer=T][,key_env=VAR]",
                   help="an OpenAI-compatible server visitors may pick (repeatable); the API key is read from "
                        "the environment variable VAR")
    p.add_argument("--allow-any-remote", action="store_true",
                   help="also accept server URLs typed in the page (private use only: on a public deployment "
                        "it lets visitors make this machine send requests into its network)")
    args = p.parse_args(argv)
    from playground.remote import parse_remote_specs

    try:
        args.remotes = parse_remote_specs(args.remote)
    except ValueError as e:
        p.error(str(e))
    return args


def main(argv=None) -> None:
    """Build and launch the app (blocks until the server stops)."""
    args = parse_args(argv)
    from playground import backends, connections, fairness, policy, uploads
    from playground.limits import from_arguments
    from playground.ui import build_ui, launch_kwargs

    model = args.model or backends.default_model()
    limits, rules = from_arguments(args, model)
    if args.allow_any_remote and limits.public:
        raise SystemExit("--allow-any-remote is for private use (this is a public deployment): configure the "
                         "servers with --remote NAME=URL instead.")
    policy.configure(rules)
    backends.set_max_loaded(limits.max_loaded_models)
    demo = build_ui(model, trust_remote_code=args.trust_remote_code, preload=not args.no_preload, limits=limits,
                    remotes=args.remotes, allow_any_remote=args.allow_any_remote)
    queue, launch = serving_kwargs(limits, args.concurrency)
    uploads.install(launch["app_kwargs"], limits)  # uploads per visitor and on disk (uploads skip the queue)
    demo.queue(**queue)
    fairness.install(demo, limits.max_jobs_per_client, trust_forwarded=limits.trust_forwarded_for,
                     new_sessions=limits.sessions_per_address, window=limits.sessions_window)
    # behind a proxy every connection comes from it: no cap per address there
    total = connections.install(limits.head_timeout,
                                None if limits.trust_forwarded_for else limits.max_connections_per_address,
                                limits.max_connections)
    if total != limits.max_connections:
        print(f"--max-connections: {total:,} (half this process's open-file limit), not {limits.max_connections:,}",
              flush=True)
    # Gradio's launch requests its own page once and stops the app when that fails (`_frontend`, gradio 6.31): under
    # a connection flood past the caps above the request is refused, and a public server must still start
    demo.launch(server_name=args.host, server_port=args.port, _frontend=False, **launch, **launch_kwargs())


def serving_kwargs(limits, concurrency: int) -> tuple[dict, dict]:
    """Keyword arguments for ``demo.queue`` and ``demo.launch`` from the deployment's `playground.limits.Limits`:
    jobs at once, waiting jobs at most (a client that never reads its answers cannot pile up unbounded work and
    request bodies), sessions kept, upload and request body sizes, event streams per visitor."""
    from playground import http_limits, stream_limits

    app_kwargs = http_limits.app_kwargs(
        limits.max_request_bytes, body_timeout=limits.body_timeout,
        pending_client_bytes=_bytes(limits.max_pending_body_mb_per_address),
        pending_total_bytes=_bytes(limits.max_pending_body_mb),
        trust_forwarded=limits.trust_forwarded_for, check_session_ids=limits.public)
    streams = stream_limits.middleware(limits.max_streams_per_client, limits.trust_forwarded_for, limits.public)
    if streams:
        app_kwargs = {**app_kwargs, "middleware": [*app_kwargs.get("middleware", ()), *streams]}
    return ({"default_concurrency_limit": concurrency, "max_size": limits.max_queue},
            {"state_session_capacity": limits.max_sessions, "max_file_size": "2mb" if limits.public else None,
             "app_kwargs": app_kwargs})


def _bytes(mb: float | None) -> int | None:
    """``mb`` megabytes (MiB) in bytes; None stays None."""
    return None if mb is None else int(mb * 2 ** 20)


if __name__ == "__main__":
    main()
