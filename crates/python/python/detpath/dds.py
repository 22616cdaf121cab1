"""detpath.dds: DDS publish-subscribe over detpath, spelled as the
``cyclonedds`` Python package spells it, so a program written for it runs
on detpath by changing its imports and naming the endpoint::

    from dataclasses import dataclass
    from pycdr2 import IdlStruct            # or: from cyclonedds.idl import IdlStruct
    from pycdr2.types import int32
    from detpath.dds import DomainParticipant, Topic, DataWriter, DataReader, Qos, Policy

    @dataclass
    class Hello(IdlStruct, typename="hello::Hello"):
        id: int32
        text: str

    dp = DomainParticipant(0, endpoint="udp://10.0.0.1:7410", peers=["10.0.0.2"])
    topic = Topic(dp, "HelloWorld", Hello)
    DataWriter(dp, topic, qos=Qos(Policy.Reliability.Reliable(duration(seconds=1)))).write(Hello(1, "hi"))

ROS 2 nodes see a topic made with ``Topic(dp, "/cmd_vel", Twist, ros2=True)``
(on the wire ``rt/cmd_vel`` of ``geometry_msgs::msg::dds_::Twist_`` when
``Twist`` is declared with ``typename="geometry_msgs.msg.Twist"``).

Beyond write and take, as cyclonedds has them: ``read_iter``/``read_next``
(samples no read returned before), instance handles (``register_instance``,
``lookup_instance``, ``dispose_instance_handle``, ``take(instance_handle=)``),
``Listener`` callbacks (``DataReader(dp, topic, listener=Listener(on_data_available=...))``,
called from a thread of the participant), ``WaitSet`` with ``ReadCondition``
and ``GuardCondition``, and ``Qos`` as a container (``a + b``, ``qos[Policy.History]``,
``Policy.Deadline in qos``). Policies detpath does not have (``Lifespan``,
``OwnershipStrength``, ...) raise QosError naming what is missing.

Samples are (de)serialized by the type's own ``serialize()`` /
``deserialize()`` and keyed by its own key machinery (RTPS key hash): the
same class serves CycloneDDS and detpath. Default QoS is DDS's (writers
reliable, readers best effort, volatile, KEEP_LAST 1). Errors raise
``detpath.Error`` subclasses (``QosError``, ``SampleError``, ``ClosedError``,
...) whose message says what was wrong.
"""

import hashlib
import time
from collections import namedtuple

from . import _detpath
from ._dds_conditions import GuardCondition, InstanceState, ReadCondition, SampleState, ViewState, WaitSet
from ._dds_listener import Dispatcher, Listener
from ._detpath import ClosedError, DdsError, Error, QosError, SampleError

__all__ = [
    "DomainParticipant",
    "Topic",
    "DataWriter",
    "DataReader",
    "Qos",
    "Policy",
    "duration",
    "SampleInfo",
    "Listener",
    "WaitSet",
    "ReadCondition",
    "GuardCondition",
    "SampleState",
    "ViewState",
    "InstanceState",
    "Error",
    "DdsError",
    "QosError",
    "SampleError",
    "ClosedError",
]


def duration(*, weeks=0, days=0, hours=0, minutes=0, seconds=0, milliseconds=0, microseconds=0, nanoseconds=0, infinite=False):
    """A duration in nanoseconds (as cyclonedds.util.duration); ``infinite=True``: None."""
    if infinite:
        return None
    s = ((weeks * 7 + days) * 24 + hours) * 3600 + minutes * 60 + seconds
    return int(s * 1e9 + milliseconds * 1e6 + microseconds * 1e3 + nanoseconds)


def _dur(ns):
    return "infinite" if ns is None or ns >= 2**63 - 1 else f"{int(ns)}ns"


_SCOPES = {
    "reliability": "Reliability",
    "durability": "Durability",
    "history": "History",
    "deadline": "Deadline",
    "liveliness": "Liveliness",
    "partition": "Partition",
    "ownership": "Ownership",
    "limits": "ResourceLimits",
    "transport_priority": "TransportPriority",
    "latency_budget": "LatencyBudget",
    "max_sample_size": "MaxSampleSize",
}


class _P:
    """One policy: its text form for the native layer and a repr;
    ``__scope__`` names its kind as cyclonedds does (``"Reliability"``)."""

    def __init__(self, scope, text, shown):
        self._scope, self._text, self._shown = scope, text, shown
        self.__scope__ = _SCOPES[scope]

    def __repr__(self):
        return f"Policy.{self._shown}"

    def __eq__(self, other):
        return isinstance(other, _P) and (other._text, other._shown) == (self._text, self._shown)

    def __hash__(self):
        return hash(self._text)


def _unsupported(name, why):
    def refuse(*args, **kwargs):
        raise QosError(f"Policy.{name}: {why}")

    refuse.__scope__ = name
    refuse.__doc__ = f"Not in detpath: {why}"
    return staticmethod(refuse)


class Policy:
    """QoS policies, named as cyclonedds.core.Policy names them."""

    class Reliability:
        BestEffort = _P("reliability", "reliability=best_effort", "Reliability.BestEffort")

        @staticmethod
        def Reliable(max_blocking_time=None):
            return _P("reliability", "reliability=reliable", f"Reliability.Reliable({max_blocking_time})")

    class Durability:
        Volatile = _P("durability", "durability=volatile", "Durability.Volatile")
        TransientLocal = _P("durability", "durability=transient_local", "Durability.TransientLocal")
        Transient = _P("durability", "durability=transient", "Durability.Transient")
        Persistent = _P("durability", "durability=persistent", "Durability.Persistent")

    class History:
        KeepAll = _P("history", "history=keep_all", "History.KeepAll")

        @staticmethod
        def KeepLast(depth):
            return _P("history", f"history=keep_last:{int(depth)}", f"History.KeepLast({depth})")

    @staticmethod
    def Deadline(deadline):
        return _P("deadline", f"deadline={_dur(deadline)}", f"Deadline({deadline})")

    class Liveliness:
        @staticmethod
        def Automatic(lease_duration=None):
            return _P("liveliness", f"liveliness=automatic:{_dur(lease_duration)}", f"Liveliness.Automatic({lease_duration})")

        @staticmethod
        def ManualByParticipant(lease_duration=None):
            return _P("liveliness", f"liveliness=manual_by_participant:{_dur(lease_duration)}", f"Liveliness.ManualByParticipant({lease_duration})")

        @staticmethod
        def ManualByTopic(lease_duration=None):
            return _P("liveliness", f"liveliness=manual_by_topic:{_dur(lease_duration)}", f"Liveliness.ManualByTopic({lease_duration})")

    @staticmethod
    def Partition(partitions):
        names = [partitions] if isinstance(partitions, str) else list(partitions)
        for n in names:
            if "," in n or ";" in n:
                raise QosError(f"partition name {n!r}: ',' and ';' are not allowed in detpath partition names")
        return _P("partition", "partition=" + ",".join(names), f"Partition({names!r})")

    class Ownership:
        Shared = _P("ownership", "ownership=shared", "Ownership.Shared")
        Exclusive = _P("ownership", "ownership=exclusive", "Ownership.Exclusive")

    @staticmethod
    def ResourceLimits(max_samples=1024, max_instances=32, max_samples_per_instance=None):
        return _P("limits", f"max_samples={int(max_samples)};max_instances={int(max_instances)}", f"ResourceLimits({max_samples}, {max_instances})")

    @staticmethod
    def TransportPriority(priority):
        """TRANSPORT_PRIORITY: 0 is best effort; above 0 a writer's datagrams carry a DSCP."""
        return _P("transport_priority", f"transport_priority={int(priority)}", f"TransportPriority({priority})")

    @staticmethod
    def LatencyBudget(budget):
        """LATENCY_BUDGET, ns (``duration(microseconds=100)``): above 0, at most an hour.
        A reader judges every sample against it (``DataReader.latency_budget_status()``)."""
        if budget is None or int(budget) <= 0 or int(budget) > 3600 * 10**9:
            raise QosError(f"LatencyBudget({budget}): a budget must be above 0 and at most 1 hour (leave the policy out for none)")
        return _P("latency_budget", f"latency_budget={int(budget)}ns", f"LatencyBudget({budget})")

    @staticmethod
    def MaxSampleSize(size):
        """detpath's own: the largest serialized sample a writer sends (default 1 MiB)."""
        return _P("max_sample_size", f"max_sample_size={int(size)}", f"MaxSampleSize({size})")

    Lifespan = _unsupported("Lifespan", "detpath's engine keeps no LIFESPAN (samples do not expire in its caches); leave it out")
    OwnershipStrength = _unsupported("OwnershipStrength", "detpath's engine has no OWNERSHIP_STRENGTH (exclusive ownership goes by writer GUID); leave it out")
    DestinationOrder = _unsupported("DestinationOrder", "detpath's engine orders by reception only (no DESTINATION_ORDER); leave it out")
    TimeBasedFilter = _unsupported("TimeBasedFilter", "detpath's engine has no TIME_BASED_FILTER; leave it out")


for _cls, _scope in ((Policy.Reliability, "Reliability"), (Policy.Durability, "Durability"), (Policy.History, "History"), (Policy.Liveliness, "Liveliness"), (Policy.Ownership, "Ownership")):
    _cls.__scope__ = _scope
for _name in ("Deadline", "Partition", "ResourceLimits", "TransportPriority", "LatencyBudget", "MaxSampleSize"):
    getattr(Policy, _name).__scope__ = _name


class Qos:
    """A set of policies (``Qos(Policy.Reliability.BestEffort, Policy.History.KeepLast(10))``);
    what it does not name keeps DDS's default. As cyclonedds's: one policy
    of a kind (two raise QosError), ``base=`` inherits what is not named,
    ``a + b`` is ``a`` with ``b``'s policies over it, ``a - b`` without
    ``b``'s, ``==``, ``len``, iteration, ``Policy.X.Y in qos`` (that policy)
    and ``Policy.X in qos`` (any of that kind), ``qos[Policy.X]`` (the
    policy of that kind, or None)."""

    def __init__(self, *policies, base=None):
        policies = list(policies)
        for p in policies:
            if not isinstance(p, _P):
                raise QosError(f"{p!r} is not a detpath.dds.Policy (use Policy.Reliability.Reliable(...), Policy.History.KeepLast(n), ...)")
        if base is not None:
            if not isinstance(base, Qos):
                raise QosError(f"base={base!r}: expected a detpath.dds.Qos")
            named = {p.__scope__ for p in policies}
            policies += [p for p in base.policies if p.__scope__ not in named]
        scopes = [p.__scope__ for p in policies]
        twice = sorted({x for x in scopes if scopes.count(x) > 1})
        if twice:
            raise QosError(f"Qos names {', '.join(twice)} more than once: one policy of a kind")
        self._policies = tuple(sorted(policies, key=lambda p: p.__scope__))

    @property
    def policies(self):
        return self._policies

    def _text(self):
        return ";".join(p._text for p in self.policies)

    def __repr__(self):
        return f"Qos({', '.join(map(repr, self.policies))})"

    def __iter__(self):
        return iter(self._policies)

    def __len__(self):
        return len(self._policies)

    def __eq__(self, other):
        return isinstance(other, Qos) and self._policies == other._policies

    def __hash__(self):
        return hash(self._policies)

    def __add__(self, other):
        if not isinstance(other, Qos):
            return NotImplemented
        return Qos(*other.policies, base=self)

    def __sub__(self, other):
        if not isinstance(other, Qos):
            return NotImplemented
        for p in other:
            if p not in self:
                raise QosError(f"{p!r} cannot be removed: it is not in {self!r}")
        return Qos(*[p for p in self._policies if p not in other._policies])

    @staticmethod
    def _scope_of(key):
        scope = getattr(key, "__scope__", None)
        if scope is None:
            raise QosError(f"{key!r} is not a policy or a kind of policy (e.g. Policy.Reliability)")
        return scope

    def __contains__(self, key):
        if isinstance(key, _P):
            return key in self._policies
        scope = self._scope_of(key)
        return any(p.__scope__ == scope for p in self._policies)

    def __getitem__(self, key):
        scope = self._scope_of(key)
        return next((p for p in self._policies if p.__scope__ == scope), None)


class SampleInfo:
    """What the reader knows of a sample (``sample.sample_info``, as cyclonedds attaches it)."""

    __slots__ = ("publication_handle", "sequence_number", "source_timestamp", "reception_timestamp", "valid_data", "instance_state", "key_hash")

    def __init__(self, d):
        for k in self.__slots__:
            setattr(self, k, d[k])

    def __repr__(self):
        return f"SampleInfo(seq={self.sequence_number}, state={self.instance_state}, valid={self.valid_data})"


PublicationMatchedStatus = namedtuple("PublicationMatchedStatus", "total_count total_count_change current_count current_count_change last_subscription_handle")
SubscriptionMatchedStatus = namedtuple("SubscriptionMatchedStatus", "total_count total_count_change current_count current_count_change last_publication_handle")
SampleLostStatus = namedtuple("SampleLostStatus", "total_count total_count_change")
SampleRejectedStatus = namedtuple("SampleRejectedStatus", "total_count total_count_change last_reason last_instance_handle")
DeadlineMissedStatus = namedtuple("DeadlineMissedStatus", "total_count total_count_change last_instance_handle")
IncompatibleQosStatus = namedtuple("IncompatibleQosStatus", "total_count total_count_change last_policy_id policies")


class _Changes:
    """The ``*_change`` fields of DDS statuses: each total against the value
    the application last read (as a DDS status read resets its changes)."""

    def __init__(self):
        self._seen = {}

    def __call__(self, name, total):
        change = total - self._seen.get(name, 0)
        self._seen[name] = total
        return change


def _check_condition(reader, condition):
    if condition is not None and not (isinstance(condition, ReadCondition) and condition.reader is reader):
        raise DdsError(f"condition={condition!r}: detpath.dds readers take a ReadCondition of the same reader")


class DomainParticipant:
    """A participant in ``domain_id`` on the detpath endpoint ``endpoint``
    (``udp://...``, ``afxdp://...``, any spec), announcing itself to
    ``peers`` (IPv4 addresses; none: the SPDP multicast group). ``netns``:
    open it inside that network namespace. ``clock="synced"``: this host's
    CLOCK_REALTIME is disciplined by PTP, so readers judge the latency budgets
    of writers on other hosts too (default ``"auto"``: writers on this host
    only). ``priority_map`` (``"0=CS0,1=AF21,40=EF"``) and ``priority_classes``
    (``"0=bulk,1=ctl"``, with a slot scheduler on the endpoint) map a writer's
    TransportPriority to its DSCP and traffic class. A context manager;
    ``close()`` says goodbye to the peers."""

    def __init__(self, domain_id=0, endpoint=None, peers=(), netns=None, busy_poll=False, clock="auto", priority_map=None, priority_classes=None):
        if endpoint is None:
            raise DdsError("DomainParticipant needs endpoint=SPEC (e.g. 'udp://10.0.0.1:7410'): detpath runs on a datapath you name")
        self.domain_id = domain_id
        self.endpoint = endpoint
        options = [f"clock={clock}"]
        if priority_map is not None:
            options.append(f"priority_map={priority_map}")
        if priority_classes is not None:
            options.append(f"priority_classes={priority_classes}")
        self._native = _detpath._DdsParticipant(domain_id, endpoint, [str(p) for p in peers], netns, busy_poll, ";".join(options))
        self._dispatcher = Dispatcher(self._native)

    def close(self):
        self._dispatcher.stop()
        self._native.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def counters(self):
        """The engine's counters (rx_datagrams, rx_malformed, ...)."""
        return self._native.counters()


def _idl(data_type):
    idl = getattr(data_type, "__idl__", None)
    if idl is None or not hasattr(data_type, "__idl_typename__"):
        raise DdsError(f"{data_type!r} is not an IdlStruct (pycdr2.IdlStruct or cyclonedds.idl.IdlStruct)")
    if getattr(idl, "keyless", None) is None:
        idl.populate()
    return idl


class Topic:
    """The topic ``name`` of ``data_type``, an ``IdlStruct`` dataclass of
    ``pycdr2`` or ``cyclonedds.idl`` (announced with its IDL type name).

    ``ros2=True``: ``name`` is a ROS 2 topic (``"/cmd_vel"`` or ``"cmd_vel"``)
    and the type a ROS 2 message declared with ROS's IDL name
    (``typename="geometry_msgs.msg.Twist"``); both go on the wire under the
    names ROS 2 nodes use (``rt/cmd_vel``, ``geometry_msgs::msg::dds_::Twist_``),
    so nodes on rmw_cyclonedds or rmw_fastrtps see the topic. ``name`` and
    ``typename`` are then the DDS names, ``ros_name`` the ROS one. A name ROS
    would refuse raises ``DdsError`` saying why."""

    def __init__(self, participant, name, data_type, qos=None, ros2=False):
        self.participant = participant
        self.name = name
        self.ros_name = None
        self.data_type = data_type
        self._idl = _idl(data_type)
        self.typename = data_type.__idl_typename__.replace(".", "::")
        if ros2:
            self.ros_name = name
            self.name, self.typename = _detpath._ros2_names(name, self.typename)
        self.keyed = not self._idl.keyless
        self.qos = qos
        # Instance handles of this topic in this program: key hash <-> handle (from 1).
        self._handles = {}
        self._keys = {}

    def _handle(self, key_hash, serialized_key=b""):
        """The handle of the instance of `key_hash` (None: unkeyed, its one instance), made on first use."""
        k = key_hash or bytes(16)
        h = self._handles.get(k)
        if h is None:
            h = self._handles[k] = len(self._handles) + 1
            self._keys[h] = (k, serialized_key)
        elif serialized_key and not self._keys[h][1]:
            self._keys[h] = (k, serialized_key)
        return h

    def _key_of_handle(self, handle):
        got = self._keys.get(handle)
        if got is None:
            raise DdsError(f"no instance with handle {handle!r} on topic {self.name!r} (handles come from register_instance / lookup_instance)")
        return got

    def get_name(self):
        """Its name on the wire (as cyclonedds's ``Topic.get_name()``)."""
        return self.name

    def get_type_name(self):
        """Its type's name on the wire (as cyclonedds's ``Topic.get_type_name()``)."""
        return self.typename

    def key_hash(self, sample):
        """RTPS §9.6.3.8 from the type's own key serializer: big-endian XCDR2
        key, zero-padded to 16 bytes when it can never exceed 16, else its MD5."""
        if not self.keyed:
            return None
        idl = self._idl
        if hasattr(idl, "keyhash"):  # pycdr2
            return bytes(idl.keyhash(sample, use_version_2=True))
        from cyclonedds.idl import Endianness  # cyclonedds.idl

        key = sample.serialize_key(endianness=Endianness.Big, use_version_2=True)[4:]
        return key.ljust(16, b"\0") if idl.v2_key_max_size <= 16 else hashlib.md5(key).digest()

    def serialized_key(self, sample):
        """The key alone with its encapsulation header (for dispose), b'' when the type cannot make it."""
        if self.keyed and hasattr(sample, "serialize_key"):
            return sample.serialize_key()
        return b""


def _qos_text(qos):
    if qos is None:
        return ""
    if not isinstance(qos, Qos):
        raise QosError(f"qos={qos!r}: expected a detpath.dds.Qos")
    return qos._text()


class DataWriter:
    """A writer on ``topic``; ``qos`` names policies (default: DDS's,
    reliable); ``listener``: a Listener whose writer callbacks are called."""

    def __init__(self, participant, topic, qos=None, listener=None):
        self.participant, self.topic = participant, topic
        self._native = participant._native.create_writer(topic.name, topic.typename, topic.keyed, _qos_text(qos))
        self._changes = _Changes()
        self._instances = set()
        self._listener = None
        self.set_listener(listener)

    def set_listener(self, listener):
        """Sets (or, None, removes) the Listener."""
        _set_listener(self, listener, is_reader=False)

    def get_listener(self):
        return self._listener

    def register_instance(self, sample):
        """The handle of ``sample``'s instance, registered with this writer
        (detpath announces nothing for it: its first write does)."""
        h = self.topic._handle(self.topic.key_hash(sample), self.topic.serialized_key(sample))
        self._instances.add(h)
        return h

    def lookup_instance(self, sample):
        """The handle of ``sample``'s instance if this writer registered or wrote it, else None."""
        h = self.topic._handles.get(self.topic.key_hash(sample) or bytes(16))
        return h if h in self._instances else None

    def dispose_instance_handle(self, handle, timestamp=None):
        """Disposes the instance of ``handle``."""
        if timestamp is not None:
            raise DdsError("dispose_instance_handle(timestamp=...): detpath stamps with this host's clock; leave timestamp out")
        key, serialized = self._own(handle)
        self._native.write_status(key, 1, serialized)

    def unregister_instance_handle(self, handle, timestamp=None):
        """Unregisters the instance of ``handle``."""
        if timestamp is not None:
            raise DdsError("unregister_instance_handle(timestamp=...): detpath stamps with this host's clock; leave timestamp out")
        key, serialized = self._own(handle)
        self._native.write_status(key, 2, serialized)
        self._instances.discard(handle)

    def _own(self, handle):
        got = self.topic._key_of_handle(handle)
        if handle not in self._instances:
            raise DdsError(f"instance handle {handle} is not registered with this writer (register_instance or write it first)")
        return got

    def write(self, sample, timestamp=None):
        """Writes one sample (serialized by its own type). ``timestamp``
        (cyclonedds's source timestamp) is not supported: detpath stamps the
        sample with this host's clock when it is written."""
        if timestamp is not None:
            raise DdsError("write(timestamp=...): detpath stamps samples with this host's clock; leave timestamp out")
        if not isinstance(sample, self.topic.data_type):
            raise SampleError(f"{type(sample).__name__} sample written on topic {self.topic.name!r} of type {self.topic.data_type.__name__}")
        key = self.topic.key_hash(sample)
        self._native.write(sample.serialize(), key)
        self._instances.add(self.topic._handles.get(key or bytes(16)) or self.topic._handle(key, self.topic.serialized_key(sample)))

    def dispose(self, sample, timestamp=None):
        """Disposes the instance of ``sample``'s key."""
        if timestamp is not None:
            raise DdsError("dispose(timestamp=...): detpath stamps with this host's clock; leave timestamp out")
        self._native.write_status(self.topic.key_hash(sample) or bytes(16), 1, self.topic.serialized_key(sample))

    def write_dispose(self, sample, timestamp=None):
        """Writes ``sample``, then disposes its instance."""
        self.write(sample, timestamp)
        self.dispose(sample)

    def unregister_instance(self, sample, timestamp=None):
        """Unregisters the instance of ``sample``'s key."""
        if timestamp is not None:
            raise DdsError("unregister_instance(timestamp=...): detpath stamps with this host's clock; leave timestamp out")
        self._native.write_status(self.topic.key_hash(sample) or bytes(16), 2, self.topic.serialized_key(sample))
        self._instances.discard(self.topic._handles.get(self.topic.key_hash(sample) or bytes(16)))

    def get_matched_subscriptions(self):
        """How many readers are matched (cyclonedds returns their handles; detpath a count as a list of that length)."""
        return [None] * self._native.status()["matched_subscriptions"]

    def status(self):
        """matched_subscriptions, incompatible_qos, written, unacknowledged, ..."""
        return self._native.status()

    def get_publication_matched_status(self):
        """PUBLICATION_MATCHED (handles are None: detpath has no instance handles)."""
        st, ch = self._native.status(), self._changes
        total = st["matched_subscriptions"] + st["unmatched"]
        return PublicationMatchedStatus(total, ch("total", total), st["matched_subscriptions"], ch("current", st["matched_subscriptions"]), None)

    def get_offered_deadline_missed_status(self):
        """OFFERED_DEADLINE_MISSED (no instance handles: None)."""
        n = self._native.status()["offered_deadline_missed"]
        return DeadlineMissedStatus(n, self._changes("deadline", n), None)

    def get_offered_incompatible_qos_status(self):
        """OFFERED_INCOMPATIBLE_QOS (the policy is not named: None, [])."""
        n = self._native.status()["incompatible_qos"]
        return IncompatibleQosStatus(n, self._changes("incompatible", n), None, [])

    def wait_for_acks(self, timeout):
        """Waits until every reliable reader acknowledged every sample; ``timeout`` in ns (``duration(...)``)."""
        return self._native.wait_for_acks((timeout or 0) / 1e9)


def _set_listener(entity, listener, is_reader):
    if listener is not None and not isinstance(listener, Listener):
        raise DdsError(f"listener={listener!r}: expected a detpath.dds.Listener")
    first = entity._listener is None and not getattr(entity, "_watched", False)
    entity._listener = listener
    if listener is not None and first:
        entity._watched = True
        entity.participant._dispatcher.watch(entity, is_reader)


_ALL = 1 << 16  # "every sample there" for a native read


class DataReader:
    """A reader on ``topic``; ``qos`` names policies (default: DDS's, best
    effort); ``listener``: a Listener whose reader callbacks are called."""

    def __init__(self, participant, topic, qos=None, listener=None):
        self.participant, self.topic = participant, topic
        self._native = participant._native.create_reader(topic.name, topic.typename, topic.keyed, _qos_text(qos))
        self._changes = _Changes()
        self._seen_keys = set()
        self._listener = None
        self.set_listener(listener)

    def set_listener(self, listener):
        """Sets (or, None, removes) the Listener."""
        _set_listener(self, listener, is_reader=True)

    def get_listener(self):
        return self._listener

    def _decode_one(self, payload, info, report=True):
        """The sample with its info attached, or None (a dispose or unregister,
        or a payload of another layout: reported to the engine, unless only
        looked at: it is reported when read or taken)."""
        if not info["valid_data"]:
            return None  # a dispose or unregister: the instance state, no sample
        try:
            s = self.topic.data_type.deserialize(payload)
        except Exception:  # another layout under the same type name
            if report:
                self._native.report_undecodable(info["publication_handle"])
            return None
        if info["key_hash"] is None and self.topic.keyed:
            # The writer sent none inline (detpath's and CycloneDDS's writers by default): the type's own.
            info["key_hash"] = self.topic.key_hash(s)
        self._seen_keys.add(info["key_hash"] or bytes(16))
        try:
            s.sample_info = SampleInfo(info)
        except AttributeError:  # a slotted dataclass
            pass
        return s

    def _decode(self, raw):
        return [s for s in (self._decode_one(p, i) for p, i in raw) if s is not None]

    def _select(self, condition, raw, key=None):
        """Of ``raw``, the samples ``condition`` (and the instance ``key``) selects, decoded: (sample, info) pairs."""
        out = []
        for payload, info in raw:
            if condition is not None and not condition._selects(info):
                continue
            s = self._decode_one(payload, info, report=False)
            if s is None or (key is not None and (info["key_hash"] or bytes(16)) != key):
                continue
            out.append((s, info))
        return out

    def _narrowed(self, N, keep, condition, instance_handle):
        _check_condition(self, condition)
        key = None if instance_handle is None else self.topic._key_of_handle(instance_handle)[0]
        if key is None and (condition is None or not condition._narrow):
            unread = condition is not None and condition._unread_only
            raw = self._native.read_unread(N) if unread and keep else self._native.take(N, keep)
            return self._decode(raw)
        # Look without changing sample states, choose, then take or read just those.
        raw = self._native.peek(_ALL, condition is not None and condition._unread_only)
        chosen = self._select(condition, raw, key)[:N]
        if chosen:
            self._native.take_these([(i["publication_handle"], i["sequence_number"]) for _, i in chosen], keep)
        return [s for s, _ in chosen]

    def take(self, N=1, condition=None, instance_handle=None):
        """Up to N samples, removed from the reader, without waiting; of the
        ReadCondition ``condition`` and of the instance ``instance_handle`` when given."""
        return self._narrowed(N, False, condition, instance_handle)

    def read(self, N=1, condition=None, instance_handle=None):
        """Up to N samples, left in the reader, without waiting; of the
        ReadCondition ``condition`` and of the instance ``instance_handle`` when given."""
        return self._narrowed(N, True, condition, instance_handle)

    def take_next(self):
        """The oldest sample, removed, or None when there is none."""
        while True:
            raw = self._native.take(1, False)
            if not raw:
                return None
            got = self._decode(raw)
            if got:
                return got[0]

    def read_next(self):
        """The oldest sample no read returned before, left in the reader, or None."""
        while True:
            raw = self._native.read_unread(1)
            if not raw:
                return None
            got = self._decode(raw)
            if got:
                return got[0]

    def take_iter(self, condition=None, timeout=None):
        """Yields samples as they arrive (removed), until none came for
        ``timeout`` ns (``duration(...)``; None: forever)."""
        _check_condition(self, condition)
        wait_s = 1e9 if timeout is None else timeout / 1e9
        while True:
            if condition is not None:
                got = self.take(64, condition)
                if got:
                    yield from got
                elif not WaitSet._one(self.participant, condition, wait_s):
                    return
                continue
            raw = self._native.take_timeout(64, wait_s)
            if not raw:
                return
            yield from self._decode(raw)

    def read_iter(self, condition=None, timeout=None):
        """Yields samples no read returned before as they arrive (left in the
        reader), until none came for ``timeout`` ns (None: forever)."""
        _check_condition(self, condition)
        wait_s = 1e9 if timeout is None else timeout / 1e9
        while True:
            got = self.read(64, condition) if condition is not None else self._decode(self._native.read_unread(64))
            if got:
                yield from got
                continue
            ok = WaitSet._one(self.participant, condition, wait_s) if condition is not None else self._native.wait_for_data(wait_s, True)
            if not ok:
                return

    def take_one(self, condition=None, timeout=None):
        """One sample, waiting at most ``timeout`` ns; TimeoutError when none came."""
        _check_condition(self, condition)
        end = None if timeout is None else time.monotonic() + timeout / 1e9
        while True:
            left = 1e9 if end is None else max(0.0, end - time.monotonic())
            got = self.take(1, condition) if condition is not None else self._decode(self._native.take_timeout(1, left))
            if got:
                return got[0]
            if condition is not None:
                WaitSet._one(self.participant, condition, left)
            if end is not None and time.monotonic() >= end:
                raise TimeoutError(f"no sample on {self.topic.name!r} within {timeout / 1e9} s")

    def lookup_instance(self, sample):
        """The handle of ``sample``'s instance if this reader has it (a sample
        of it was taken or read here, or it waits in the reader), else None."""
        key = self.topic.key_hash(sample) or bytes(16)
        if key in self._seen_keys or self._native.instance_state(key) is not None:
            return self.topic._handle(key)
        return None

    def latency_budget_status(self):
        """The LATENCY_BUDGET status (a dict; reading it resets ``over_change``):
        ``budget_ns``, ``clock`` (``same-host``, ``synchronised``, or ``unsynchronised``:
        then nothing is judged), ``within``, ``over``, ``over_change``, ``causes``
        (cause name -> count), ``unjudged``, ``implausible``, and ``latency``
        (``count``, ``sum_ns``, ``max_ns``, ``buckets``: [(upper bound ns or None, n)])."""
        return self._native.budget_status()

    def wait_for_over_budget(self, timeout=None):
        """Waits until a sample arrived over its budget since the status was last
        read, at most ``timeout`` ns (None: forever): True when one did, False when
        the time ran out."""
        while True:
            got = self._native.wait_over_budget(1e9 if timeout is None else timeout / 1e9)
            if got or timeout is not None:
                return got

    def get_matched_publications(self):
        """Matched writers (a list of that length)."""
        return [None] * self._native.status()["matched_publications"]

    def status(self):
        """matched_publications, lost, rejected, undecodable, ..."""
        return self._native.status()

    def get_subscription_matched_status(self):
        """SUBSCRIPTION_MATCHED (handles are None: detpath has no instance handles)."""
        st, ch = self._native.status(), self._changes
        total = st["matched_publications"] + st["unmatched"]
        return SubscriptionMatchedStatus(total, ch("total", total), st["matched_publications"], ch("current", st["matched_publications"]), None)

    def get_sample_lost_status(self):
        """SAMPLE_LOST."""
        n = self._native.status()["lost"]
        return SampleLostStatus(n, self._changes("lost", n))

    def get_sample_rejected_status(self):
        """SAMPLE_REJECTED (a KEEP_ALL cache was full; the reason and instance are not kept: None)."""
        n = self._native.status()["rejected"]
        return SampleRejectedStatus(n, self._changes("rejected", n), None, None)

    def get_requested_deadline_missed_status(self):
        """REQUESTED_DEADLINE_MISSED (no instance handles: None)."""
        n = self._native.status()["requested_deadline_missed"]
        return DeadlineMissedStatus(n, self._changes("deadline", n), None)

    def get_requested_incompatible_qos_status(self):
        """REQUESTED_INCOMPATIBLE_QOS (the policy is not named: None, [])."""
        n = self._native.status()["incompatible_qos"]
        return IncompatibleQosStatus(n, self._changes("incompatible", n), None, [])
