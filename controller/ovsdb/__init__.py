"""OVSDB side of the agent: the local OVS and Southbound connections, the IDL fast path, change tracking, row indexes and SSL streams."""
