"""Old import path of :func:`physical.add_to_desired`, kept only while
``controller/pflow_output.py`` imports it from here; use ``physical`` instead."""

from physical.ofbuild import GENERIC_OWNER, add_to_desired

__all__ = ["GENERIC_OWNER", "add_to_desired"]
