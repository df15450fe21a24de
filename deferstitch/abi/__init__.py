"""Kernel ABI only: bytes -> typed values for perf_event_attr, PERF_RECORD_* and the sample layout.

Nothing here opens a file; ``deferstitch.perfdata`` is the container around these structures.
"""
