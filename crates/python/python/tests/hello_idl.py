"""The hello world's type declared once with cyclonedds.idl, imported by
test_dds.py (detpath's side) and dds_cyclone_peer.py (CycloneDDS's side)."""

from dataclasses import dataclass

from cyclonedds.idl import IdlStruct
from cyclonedds.idl.annotations import key
from cyclonedds.idl.types import int32, uint32


@dataclass
class Hello(IdlStruct, typename="hello::Hello"):
    id: int32
    key("id")
    count: uint32
    text: str
