"""The computed engine nodes of the 23.03 graph between the OVSDB tables
and the flow outputs, one module per node (C's en_<name> of
ovn-controller.c).

Design note
-----------
Every class here implements ``controller.engine.core.EngineNode`` (``data``,
``run``, ``handlers``, ``clear_tracked``) and is wired by name in
``controller/engine/graph.py``:

* ``runtime_data`` -- bindings, local datapaths, related ports;
* ``ovs_interface_shadow`` -- the Interface changes runtime_data handles;
* ``ct_zones`` -- conntrack zones of local ports and datapaths;
* ``if_status_mgr`` -- the interface state manager (VIF MTUs);
* ``addr_sets``, ``port_groups`` -- the constant sets of ``$name``/``@name``;
* ``northd_options`` -- SB_Global options the flows read;
* ``dhcp_options`` -- the DHCPv4/DHCPv6 option code tables;
* ``template_vars`` -- this chassis' Chassis_Template_Var values;
* ``lb_data`` -- the Load_Balancer rows whose flows must be rebuilt;
* ``non_vif_data`` -- tunnel and patch ports on br-int.

Long-lived data (runtime data, zones, the if-status manager) lives in
``controller.engine.agent_nodes.AgentState``, which these modules know only as a
type.

A node's data holds what it computed plus what changed in this iteration
(forgotten by ``clear_tracked``).  The nodes added for C's graph
(``northd_options`` and below) return True from ``run`` only when their
data differs from the last run, so a dependant with a recompute edge
recomputes only for a real change.
"""
