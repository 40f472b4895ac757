"""Version of ovn-controller-py and the upstream versions it mirrors."""

__version__ = "0.1.0"

PROGRAM = "ovn-controller-py"
OVN_VERSION = "23.03.1"          # behaviour target: ovn-controller 23.03.1
OVS_LIBRARY_VERSION = "3.1.0"    # the OVS release ovn-controller 23.03.1 was built against
OPENFLOW_VERSIONS = "0x6:0x6"    # OpenFlow 1.5 only
SB_SCHEMA_VERSION = "20.27.0"


def version_text() -> str:
    """The `--version` text (also a sensible `version` appctl reply)."""
    return (
        f"{PROGRAM} {__version__}\n"
        f"compatible with OVN {OVN_VERSION}, OpenFlow versions {OPENFLOW_VERSIONS}\n"
        f"SB DB Schema {SB_SCHEMA_VERSION}\n"
    )
