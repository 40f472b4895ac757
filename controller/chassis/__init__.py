"""This hypervisor in the Southbound and on br-int: chassis registration, tunnels, patch ports, tunnel BFD and OVS feature probing."""
