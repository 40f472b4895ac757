"""Small fakes of IDL rows for agent unit tests."""

from __future__ import annotations

import uuid as uuidlib
from typing import Any


class FakeRow:
    """Attribute bag with a uuid and IDL-like map mutators."""

    def __init__(self, **cols: Any) -> None:
        self.__dict__["uuid"] = cols.pop("uuid", None) or uuidlib.uuid4()
        self.__dict__["_writes"] = []
        self.__dict__["_deleted"] = False
        for k, v in cols.items():
            self.__dict__[k] = v

    def __setattr__(self, k: str, v: Any) -> None:
        self.__dict__["_writes"].append(("set", k, v))
        self.__dict__[k] = v

    def setkey(self, col: str, key: str, value: str) -> None:
        self.__dict__["_writes"].append(("setkey", col, key, value))
        d = dict(self.__dict__.get(col) or {})
        d[key] = value
        self.__dict__[col] = d

    def delkey(self, col: str, key: str, value: str | None = None) -> None:
        self.__dict__["_writes"].append(("delkey", col, key))
        d = dict(self.__dict__.get(col) or {})
        d.pop(key, None)
        self.__dict__[col] = d

    def verify(self, col: str) -> None:
        pass

    def delete(self) -> None:
        self.__dict__["_deleted"] = True

    @property
    def writes(self) -> list[tuple[Any, ...]]:
        w: list[tuple[Any, ...]] = self.__dict__["_writes"]
        return w

    def __hash__(self) -> int:
        return hash(self.uuid)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakeRow) and other.uuid == self.uuid

    def __repr__(self) -> str:
        return f"FakeRow({getattr(self, 'name', None) or getattr(self, 'logical_port', None) or self.uuid})"


def pb(name: str, dp: FakeRow, key: int, type: str = "", **kw: Any) -> FakeRow:
    cols: dict[str, Any] = dict(logical_port=name, datapath=dp, tunnel_key=key, type=type,
                                options={}, chassis=[], requested_chassis=[],
                                additional_chassis=[], requested_additional_chassis=[],
                                parent_port=[], tag=[], encap=[], additional_encap=[],
                                up=[False], external_ids={}, virtual_parent=[],
                                ha_chassis_group=[], gateway_chassis=[], mac=[])
    cols.update(kw)
    return FakeRow(**cols)


def dp(key: int, **kw: Any) -> FakeRow:
    cols: dict[str, Any] = dict(tunnel_key=key, external_ids={}, load_balancers=[])
    cols.update(kw)
    return FakeRow(**cols)
