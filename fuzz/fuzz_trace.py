"""atheris (libFuzzer for Python) over the trace.dat side: ownfile.py, bridge.py, reader.py.

Usage (make fuzz does this; any libFuzzer flag goes through):
    python3 fuzz/fuzz_trace.py CORPUS_DIR SEED_DIR -max_total_time=600 -artifact_prefix=CRASH_DIR/trace-
    python3 fuzz/fuzz_trace.py CRASH_FILE           # replay one input

Coverage is that of our Python (bridge, reader, stitcher), so mutations that reach new decoding
paths are kept. A case fails when fuzz/cases.py's
trace_case raises (a traceback where one line was due, counts that do not add up) or when the
process dies (a SIGSEGV/SIGBUS in the C walker or in a copy): libFuzzer saves the input under
-artifact_prefix. pip install atheris.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import atheris                                  # noqa: E402

with atheris.instrument_imports(include=["deferstitch"]):
    import deferstitch.tracecmd.bridge          # noqa: E402,F401
    import deferstitch.tracecmd.reader          # noqa: E402,F401
    import deferstitch.stitcher                 # noqa: E402,F401  (instrumented)
import cases                                    # noqa: E402


def one(data):
    cases.trace_case(bytes(data))


if __name__ == "__main__":
    atheris.Setup(sys.argv, one)
    atheris.Fuzz()
