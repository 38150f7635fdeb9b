"""Paging throughput of the official ``together`` SDK, run in the SDK's own throwaway venv.

Standalone on purpose (stdlib + ``together`` only): ``benchmarks/.venv-sdk/bin/python
benchmarks/sdk_paging.py BASE_URL API_KEY REPEATS [PAGE_SIZE [dagster]]``; ``dagster`` imports
Dagster first (the venv has it), so the SDK reads in the heap of a code server, as ours does in
the benchmark's "imported dagster" rows. Prints one JSON line: the SDK version, the
sessions counted per pass and the seconds of each timed pass (one untimed warm-up pass first).

The SDK's default base URL is ``https://api.together.ai`` and its paths carry ``/v1``, so the
simulator's origin is passed as is.
"""

import json
import sys
import time


def main() -> None:
    base_url, api_key, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
    page_size = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    if sys.argv[5:6] == ["dagster"]:
        import dagster  # noqa: F401 - a code server's heap
    import together

    client = together.Together(api_key=api_key, base_url=base_url, max_retries=0)
    sessions = client.post_training.sessions

    def one_pass() -> int:
        count, after = 0, None
        while True:
            if after is None:
                page = sessions.list(limit=page_size)
            else:
                page = sessions.list(limit=page_size, after=after)
            for session in page.data or []:
                count += 1
                _ = session.id
            meta = page.meta
            after = meta.next_cursor if meta is not None else None
            if not after or (meta is not None and meta.has_more is False):
                return count

    one_pass()
    times, counts = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        counts.append(one_pass())
        times.append(time.perf_counter() - started)
    client.close()
    print(json.dumps({"version": together.__version__, "counts": counts, "times": times}))


if __name__ == "__main__":
    main()
