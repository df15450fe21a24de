"""Sink: an output's three calls from the run (record, sample, close), each doing nothing.

The base of outputs that take nothing (pipeline.Null: the report alone) or take their samples
another way: resolved samples, from the Python path and the C engine alike (folded, flame
graphs, pprof, speedscope, script, AddressStacks), each overriding what it uses.
"""


class Sink:
    def record(self, rec):
        """A record other than a sample, in time order (maps, comms, lost, ...)."""

    def sample(self, s):
        """A sample whose outcome is final."""

    def close(self):
        """The input has ended (or stopped at damage): finish the output."""
