from controller.chassis.encaps import plan_tunnels
from controller.chassis.registration import chassis_config
from tests.agent.fakes import FakeRow


def ovs_row(**ext):
    return FakeRow(external_ids=ext, iface_types=["geneve", "vxlan", "internal"])


def test_chassis_config_requires_encap():
    assert chassis_config(ovs_row(), "hv1", None) is None
    cfg = chassis_config(ovs_row(**{"ovn-encap-type": "geneve,vxlan",
                                    "ovn-encap-ip": "10.0.0.1",
                                    "ovn-encap-ip-hv1": "10.0.0.9",
                                    "hostname": "host1",
                                    "ovn-bridge-mappings": "phys:br-ex"}),
                         "hv1", FakeRow(datapath_type="dummy"))
    assert cfg is not None
    assert cfg.encap_types == ("geneve", "vxlan") and cfg.encap_ips == ("10.0.0.9",)
    assert cfg.hostname == "host1" and cfg.encap_csum == "true"
    oc = cfg.other_config
    assert oc["datapath-type"] == "dummy" and oc["iface-types"] == "geneve,vxlan,internal"
    assert oc["ovn-bridge-mappings"] == "phys:br-ex" and oc["port-up-notif"] == "true"
    assert oc["ovn-monitor-all"] == "false" and oc["is-interconn"] == "false"


def encap(t, ip, **opts):
    return FakeRow(type=t, ip=ip, options=opts or {"csum": "true"})


def chassis(name, encaps, tz=(), **oc):
    return FakeRow(name=name, encaps=list(encaps), transport_zones=list(tz), other_config=oc)


def test_plan_tunnels_preference_names_and_cleanup():
    me = chassis("hv1", [encap("geneve", "1.1.1.1"), encap("vxlan", "1.1.1.1")])
    peers = [
        me,
        chassis("hv2-long-name", [encap("geneve", "2.2.2.2"), encap("vxlan", "2.2.2.2"),
                                  encap("geneve", "2.2.2.3")]),
        chassis("hv3", [encap("vxlan", "3.3.3.3")]),
        chassis("hv4", [encap("stt", "4.4.4.4")]),                 # nothing in common
        chassis("hv5", [encap("geneve", "5.5.5.5")], is_remote="x", **{"is-remote": "true"}),
        chassis("hv6", [encap("geneve", "6.6.6.6")], tz=["tzA"]),  # other transport zone
    ]
    stale = FakeRow(name="ovn-gone-0", external_ids={"ovn-chassis-id": "gone@9.9.9.9"},
                    interfaces=[])
    other = FakeRow(name="vif1", external_ids={}, interfaces=[])
    plan = plan_tunnels(me, peers, None, {}, [stale, other])
    got = {(s.tunnel_id, s.type, s.name) for s in plan.add}
    assert got == {("hv2-long-name@2.2.2.2", "geneve", "ovn-hv2-lo-0"),
                   ("hv2-long-name@2.2.2.3", "geneve", "ovn-hv2-lo-1"),
                   ("hv3@3.3.3.3", "vxlan", "ovn-hv3-0")}
    spec = next(s for s in plan.add if s.tunnel_id == "hv3@3.3.3.3")
    assert dict(spec.options) == {"remote_ip": "3.3.3.3", "key": "flow", "csum": "true"}
    assert plan.delete == [stale]


def test_plan_keeps_matching_tunnel_and_replaces_changed_one():
    me = chassis("hv1", [encap("geneve", "1.1.1.1")])
    peer = chassis("hv2", [encap("geneve", "2.2.2.2")])
    iface = FakeRow(type="geneve", options={"remote_ip": "2.2.2.2", "key": "flow",
                                            "csum": "true"})
    port = FakeRow(name="ovn-hv2-0", external_ids={"ovn-chassis-id": "hv2@2.2.2.2"},
                   interfaces=[iface])
    plan = plan_tunnels(me, [me, peer], None, {}, [port])
    assert plan.keep == [port] and not plan.add and not plan.delete
    plan2 = plan_tunnels(me, [me, peer], None, {"ovn-encap-tos": "inherit"}, [port])
    assert plan2.delete == [port]
    assert plan2.add[0].name == "ovn-hv2-0" and ("tos", "inherit") in plan2.add[0].options


def test_has_map_key_on_idl_rows_and_plain_objects() -> None:
    import uuid
    from types import SimpleNamespace

    import ovs.db.data
    import ovs.db.idl

    from controller.chassis.encaps import has_map_key
    from controller.ovsdb.connections import SB_SCHEMA

    helper = ovs.db.idl.SchemaHelper(SB_SCHEMA)
    helper.register_all()
    idl = ovs.db.idl.Idl("unix:/nonexistent/sb.sock", helper)
    try:
        table = idl.tables["Chassis"]
        col = table.columns["external_ids"]

        def row(ext: dict[str, str]) -> ovs.db.idl.Row:
            return ovs.db.idl.Row(idl, table, uuid.uuid4(), {
                "external_ids": ovs.db.data.Datum.from_python(col.type, ext,
                                                              ovs.db.idl._row_to_uuid)})

        keys = ("ovn-chassis-id", "ovn-localnet-port")
        assert has_map_key(row({"ovn-localnet-port": "ln1", "x": "y"}), "external_ids", keys)
        assert not has_map_key(row({"iface-id": "vif1"}), "external_ids", keys)
        assert not has_map_key(row({}), "external_ids", keys)
        # A value equal to a key does not count.
        assert not has_map_key(row({"a": "ovn-chassis-id"}), "external_ids", keys)
        # A column changed in the open transaction is read through the library.
        r = row({"iface-id": "vif1"})
        r.__dict__["_changes"]["external_ids"] = ovs.db.data.Datum.from_python(
            col.type, {"ovn-chassis-id": "hv2@1.2.3.4"}, ovs.db.idl._row_to_uuid)
        assert has_map_key(r, "external_ids", keys)
        # A column the server never sent holds its default (empty) value.
        bare = ovs.db.idl.Row(idl, table, uuid.uuid4(), ovs.db.idl.ColumnDefaultDict(table))
        assert not has_map_key(bare, "external_ids", keys)
        # Scalar columns: the value itself is probed.
        pbs = idl.tables["Port_Binding"]
        tcol = pbs.columns["type"]
        ln = ovs.db.idl.Row(idl, pbs, uuid.uuid4(), ovs.db.idl.ColumnDefaultDict(pbs))
        assert not has_map_key(ln, "type", ("localnet", "l2gateway"))
        ln._data["type"] = ovs.db.data.Datum.from_python(tcol.type, "localnet",
                                                         ovs.db.idl._row_to_uuid)
        assert has_map_key(ln, "type", ("localnet", "l2gateway"))
        assert not has_map_key(ln, "type", ("l2gateway",))
        # Plain objects (tests, fakes) are read as attributes.
        assert has_map_key(SimpleNamespace(external_ids={"ovn-chassis-id": "a"}),
                           "external_ids", keys)
        assert not has_map_key(SimpleNamespace(external_ids={}), "external_ids", keys)
    finally:
        idl.close()
