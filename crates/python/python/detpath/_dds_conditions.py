"""Sample, view and instance states, read conditions, guard conditions and
the wait set of ``detpath.dds``, spelled as ``cyclonedds.core`` spells them.

A wait set sleeps in the native layer (the GIL released): on one reader's
arrival when a single read condition is attached, else on its
participant's engine handling datagrams, looking again at least every
50 ms (a guard condition set from another thread is seen within that)."""

import time

from ._detpath import DdsError


class SampleState:
    """Whether a sample was returned by a read before (as cyclonedds.core.SampleState)."""

    Read = 1
    NotRead = 2
    Any = 3


class ViewState:
    """Whether the instance is new to the reader (as cyclonedds.core.ViewState;
    detpath does not tell them apart: every mask with a view state matches)."""

    New = 4
    Old = 8
    Any = 12


class InstanceState:
    """The state of a sample's instance (as cyclonedds.core.InstanceState)."""

    Alive = 16
    NotAliveDisposed = 32
    NotAliveNoWriters = 64
    Any = 112


_STATE_BIT = {"alive": InstanceState.Alive, "disposed": InstanceState.NotAliveDisposed, "no_writers": InstanceState.NotAliveNoWriters}


class ReadCondition:
    """Samples of ``reader`` in the states of ``mask`` (an OR of SampleState,
    ViewState and InstanceState; a part left out means any): triggers while
    such a sample is there. ``reader.read(condition=c)`` and
    ``take(condition=c)`` return only those."""

    def __init__(self, reader, mask=0):
        self.reader = reader
        self.mask = int(mask)
        sample = self.mask & SampleState.Any
        instance = self.mask & InstanceState.Any
        self._unread_only = sample == SampleState.NotRead
        if sample == SampleState.Read:
            raise NotImplementedError("ReadCondition(SampleState.Read) alone: detpath.dds selects NOT_READ samples (SampleState.NotRead) or any, not only READ ones")
        self._instances = instance or InstanceState.Any

    def get_mask(self):
        return self.mask

    def _selects(self, info):
        return bool(_STATE_BIT.get(info["instance_state"], 0) & self._instances)

    @property
    def _narrow(self):
        return self._instances != InstanceState.Any

    def triggered(self):
        """True while a sample this condition selects is there."""
        if not self._narrow:
            return self.reader._native.wait_for_data(0.0, self._unread_only)
        if self._unread_only and not self.reader._native.wait_for_data(0.0, True):
            return False
        return bool(self.reader._select(self, self.reader._native.peek(1 << 16, self._unread_only)))

    def _wait(self, seconds):
        return self.reader._native.wait_for_data(seconds, self._unread_only)


class GuardCondition:
    """A condition the application triggers (``set_trigger_value(True)``)."""

    def __init__(self, domain_participant=None):
        self.participant = domain_participant
        self._value = False

    def set_trigger_value(self, value=True):
        self._value = bool(value)

    def get_trigger_value(self):
        return self._value

    def read_trigger(self):
        """The value, reset to False (as cyclonedds's ``read_trigger``/``take_trigger``)."""
        v, self._value = self._value, False
        return v

    take_trigger = read_trigger

    def triggered(self):
        return self._value


class WaitSet:
    """Conditions to wait for together (``attach``/``detach``; a DataReader
    attached is its ReadCondition of any sample). ``wait(timeout)``, timeout
    in ns (``duration(...)``; None: forever), returns how many conditions
    triggered, 0 when the time ran out."""

    def __init__(self, domain_participant):
        self.participant = domain_participant
        self._conditions = []

    def attach(self, condition):
        c = self._condition(condition)
        if not any(x is condition for x, _ in self._conditions):
            self._conditions.append((condition, c))

    def detach(self, condition):
        before = len(self._conditions)
        self._conditions = [(x, c) for x, c in self._conditions if x is not condition]
        if len(self._conditions) == before:
            raise DdsError(f"{condition!r} is not attached to this WaitSet")

    def is_attached(self, condition):
        return any(x is condition for x, _ in self._conditions)

    def get_entities(self):
        return [x for x, _ in self._conditions]

    def _condition(self, thing):
        if isinstance(thing, (ReadCondition, GuardCondition)):
            return thing
        if hasattr(thing, "_native") and hasattr(thing._native, "wait_for_data"):
            return ReadCondition(thing, SampleState.Any)
        raise DdsError(f"{thing!r}: a WaitSet waits for ReadCondition, GuardCondition or DataReader")

    def _triggered(self):
        return sum(1 for _, c in self._conditions if c.triggered())

    def wait(self, timeout=None):
        end = None if timeout is None else time.monotonic() + max(0, timeout) / 1e9
        while True:
            n = self._triggered()
            if n:
                return n
            left = 1.0 if end is None else end - time.monotonic()
            if left <= 0:
                return 0
            conds = [c for _, c in self._conditions]
            if len(conds) == 1 and isinstance(conds[0], ReadCondition) and not conds[0]._narrow:
                conds[0]._wait(min(left, 1.0))
            else:
                self.participant._native.wait_for_activity(min(left, 0.05))

    @staticmethod
    def _one(participant, condition, seconds):
        """Waits for one condition at most ``seconds``: True when it triggered."""
        ws = WaitSet(participant)
        ws.attach(condition)
        return ws.wait(int(seconds * 1e9)) > 0

    def wait_until(self, abstime):
        """As ``wait``, until ``abstime`` (ns since the epoch, as time.time_ns())."""
        return self.wait(max(0, abstime - time.time_ns()))
