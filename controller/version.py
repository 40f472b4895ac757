"""Version of ovn-controller-py, the upstream versions it mirrors, and the
program name it runs under.

The program name follows how the agent is invoked, as OVS's ``program_name``
does: started as ``ovn-controller`` (the drop-in entry point) it uses
``ovn-controller`` for its default pidfile, log file and control socket;
started as ``ovn-controller-py`` or ``python -m controller`` it uses
``ovn-controller-py``.  The version texts always begin with the C daemon's
lines, word for word, because tools parse them (ovn-kubernetes reads the line
starting ``ovn-controller ``); our own version follows on the last line.
"""

import os

__version__ = "0.1.0"

PACKAGE = "ovn-controller-py"    # our distribution / own version line
C_PROGRAM = "ovn-controller"     # the daemon we replace
OVN_VERSION = "23.03.1"          # behaviour target: ovn-controller 23.03.1
OVS_LIBRARY_VERSION = "3.1.0"    # the OVS release ovn-controller 23.03.1 was built against
OPENFLOW_VERSIONS = "0x6:0x6"    # OpenFlow 1.5 only
SB_SCHEMA_VERSION = "20.27.0"

# Process-global, like OVS's program_name; set once by controller.cli.main().
PROGRAM = PACKAGE


def program_from_argv0(argv0: str) -> str:
    """The program name for an argv[0]: its basename, except that running the
    package (``python -m controller`` gives ``.../__main__.py``) or an unknown
    interpreter name counts as ``ovn-controller-py``."""
    base = os.path.basename(argv0 or "")
    if base.endswith(".py"):
        base = base[:-3]
    if not base or base in ("__main__", "-c", "-m") or base.startswith("python"):
        return PACKAGE
    return base


def set_program(name: str) -> None:
    global PROGRAM
    PROGRAM = name


def own_version_line() -> str:
    return f"{PACKAGE} {__version__}\n"


def version_text() -> str:
    """``--version``: C's four lines, then ours."""
    return (f"{C_PROGRAM} {OVN_VERSION}\n"
            f"Open vSwitch Library {OVS_LIBRARY_VERSION}\n"
            f"OpenFlow versions {OPENFLOW_VERSIONS}\n"
            f"SB DB Schema {SB_SCHEMA_VERSION}\n" + own_version_line())


def appctl_version_text() -> str:
    """``ovn-appctl version``: C's two lines, then ours."""
    return (f"{C_PROGRAM} {OVN_VERSION}\n"
            f"Open vSwitch Library {OVS_LIBRARY_VERSION}\n" + own_version_line())
