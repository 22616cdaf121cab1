"""Listeners of ``detpath.dds``, spelled as ``cyclonedds.core.Listener``:
callbacks for a reader's or writer's statuses, called from one thread per
participant that sleeps in the native layer until the engine handled
datagrams (at most 100 ms), then compares each watched entity's status
with what it last saw. Callbacks run on that thread: they may write, read
and take (detpath takes no lock while calling them)."""

import threading
import weakref

from ._detpath import ClosedError, DdsError

CALLBACKS = (
    "on_data_available",
    "on_subscription_matched",
    "on_publication_matched",
    "on_sample_lost",
    "on_sample_rejected",
    "on_requested_deadline_missed",
    "on_offered_deadline_missed",
    "on_requested_incompatible_qos",
    "on_offered_incompatible_qos",
)


class Listener:
    """Status callbacks: subclass and override, or pass them by name
    (``Listener(on_data_available=lambda reader: ...)``). A reader's take
    ``(reader)`` (on_data_available) or ``(reader, status)``; a writer's
    ``(writer, status)``, the status as ``get_*_status()`` returns it."""

    def __init__(self, **kwargs):
        for name, f in kwargs.items():
            if name not in CALLBACKS:
                raise DdsError(f"Listener({name}=...): detpath.dds calls {', '.join(CALLBACKS)}")
            setattr(self, name, f)

    def on_data_available(self, reader):
        pass

    def on_subscription_matched(self, reader, status):
        pass

    def on_publication_matched(self, writer, status):
        pass

    def on_sample_lost(self, reader, status):
        pass

    def on_sample_rejected(self, reader, status):
        pass

    def on_requested_deadline_missed(self, reader, status):
        pass

    def on_offered_deadline_missed(self, writer, status):
        pass

    def on_requested_incompatible_qos(self, reader, status):
        pass

    def on_offered_incompatible_qos(self, writer, status):
        pass


# (status key, callback, the entity's get_*_status) per kind; the matched
# statuses change on the total (matches and unmatches) and on the current count.
_READER = (
    (("matched_publications", "unmatched"), "on_subscription_matched", "get_subscription_matched_status"),
    (("lost",), "on_sample_lost", "get_sample_lost_status"),
    (("rejected",), "on_sample_rejected", "get_sample_rejected_status"),
    (("requested_deadline_missed",), "on_requested_deadline_missed", "get_requested_deadline_missed_status"),
    (("incompatible_qos",), "on_requested_incompatible_qos", "get_requested_incompatible_qos_status"),
)
_WRITER = (
    (("matched_subscriptions", "unmatched"), "on_publication_matched", "get_publication_matched_status"),
    (("offered_deadline_missed",), "on_offered_deadline_missed", "get_offered_deadline_missed_status"),
    (("incompatible_qos",), "on_offered_incompatible_qos", "get_offered_incompatible_qos_status"),
)


class _Watched:
    def __init__(self, entity, is_reader):
        self.ref = weakref.ref(entity)
        self.is_reader = is_reader
        self.seen = {}

    def poll(self):
        """Calls the callbacks whose status changed; False once the entity is gone."""
        e = self.ref()
        if e is None:
            return False
        listener = e._listener
        if listener is None:
            return True
        st = e._native.status()
        if self.is_reader:
            # `received` sums over matched writers: it can drop when one goes.
            before, self.seen["received"] = self.seen.get("received", 0), st["received"]
            if st["received"] > before or (st["received"] != before and st["waiting"]):
                listener.on_data_available(e)
        for keys, callback, getter in _READER if self.is_reader else _WRITER:
            now = tuple(st[k] for k in keys)
            if now != self.seen.get(callback, (0,) * len(keys)):
                self.seen[callback] = now
                getattr(listener, callback)(e, getattr(e, getter)())
        return True


class Dispatcher:
    """The participant's listener thread (started with the first listener)."""

    def __init__(self, native):
        self._native = native
        self._watched = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None

    def watch(self, entity, is_reader):
        with self._lock:
            self._watched.append(_Watched(entity, is_reader))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="detpath-dds-listener", daemon=True)
                self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                self._native.wait_for_activity(0.1)
            except ClosedError:
                return
            with self._lock:
                watched = list(self._watched)
            gone = [w for w in watched if not self._poll(w)]
            if gone:
                with self._lock:
                    self._watched = [w for w in self._watched if w not in gone]

    def _poll(self, w):
        try:
            return w.poll()
        except ClosedError:
            self._stop.set()
            return False

    def stop(self):
        """Stops the thread (before the participant closes: its goodbye is not delayed)."""
        self._stop.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join()
