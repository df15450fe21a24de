"""The perf.data container: header, attrs, features, pipe mode, record stream, time order, writer."""
from .reader import PerfData, Record  # noqa: F401
