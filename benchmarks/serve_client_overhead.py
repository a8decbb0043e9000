"""What the serve suite's client adds to the inter-token latency it measures.

Starts the canned server (:mod:`harness.measure.serving.canned`: no model, a fixed text
streamed at a fixed pace; it reports the gaps between pieces as it sent them), sends streams
through the harness's own client and stream runner, and sets, side by side in one run, the
ITL the client measured against the server's own gaps.

    python benchmarks/serve_client_overhead.py [--requests 40] [--interval-ms 20]

Prints, per concurrency: mean and p99 ITL as measured and as sent, and the client's share:
(measured − sent) / sent of the mean. The goal is ≤ 1%.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from harness.measure.serving.openai_client import OpenAIClient
    from harness.measure.serving.launcher import ServerProcess
    from suites.serve.load import Stream

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=40)
    p.add_argument("--interval-ms", type=float, default=20.0)
    p.add_argument("--concurrency", default="1,8")
    a = p.parse_args()
    import tempfile

    log = Path(tempfile.mkdtemp()) / "canned.log"
    server = ServerProcess(lambda port: ([sys.executable, "-m", "harness.measure.serving.canned",
                                          "--port", str(port), "--interval-ms",
                                          str(a.interval_ms)], {}), log, 30, "canned")
    server.start()
    try:
        client = OpenAIClient(server.url, dialect="vllm")
        msgs = [{"role": "user", "content": "x"}]
        print(f"canned server: a piece every {a.interval_ms:g} ms; {a.requests} requests per "
              "stream; ITL in ms")
        print(f"{'concurrency':>11} {'measured':>9} {'sent':>9} {'p99 meas':>9} {'p99 sent':>9} "
              f"{'client share':>13}")
        for c in [int(x) for x in a.concurrency.split(",")]:
            out = Stream(lambda i: client.complete({"type": "object"}, msgs), c).run(
                list(range(a.requests)), [0.0] * a.requests, lambda item, res: None)
            meas = np.asarray([g for _, r in out.results for g in r.chunk_ns], float) / 1e6
            sent = np.asarray([g for _, r in out.results for g in (r.server_gaps_ns or [])],
                              float) / 1e6
            share = (meas.mean() - sent.mean()) / sent.mean()
            print(f"{c:>11} {meas.mean():>9.3f} {sent.mean():>9.3f} "
                  f"{np.percentile(meas, 99):>9.3f} {np.percentile(sent, 99):>9.3f} "
                  f"{share:>12.2%}")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
