"""One rank of a RankPool (see harness.py): runs cases until told to stop.

Replies go to a private copy of stdout; fd 1 itself is pointed at stderr
so that anything a case or a library prints cannot corrupt the protocol.
"""

import importlib
import json
import os
import sys
import traceback

reply = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr

# (after the redirection) The pool's cases module: cases.py unless the pool
# names another (c10d_cases.py for the torch.distributed backend).
cases = importlib.import_module(os.environ.get("SHOAL_TEST_CASES", "cases"))


def main():
    state = cases.State()
    for line in sys.stdin:
        req = json.loads(line)
        if req["case"] == "__exit__":
            break
        try:
            value = getattr(cases, req["case"])(state, *req["args"])
            answer = {"ok": True, "value": value}
        except BaseException as e:  # report everything, keep serving
            answer = {"ok": False, "type": type(e).__name__,
                      "error": traceback.format_exc()}
        reply.write(json.dumps(answer) + "\n")
        reply.flush()
    state.close()


main()
