"""pinctrl: an ARP-reply storm (put_arp for N distinct IPs) under each agent.

``python -m benchmarks.pinctrl_storm [N]`` builds a switch behind a router
in a sandbox per agent (the C ovn-controller, then ours), injects N ARP
replies to the router from N different IPs (``netdev-dummy/receive``, 50
frames per call), and prints how many MAC_Binding rows each agent wrote
once the table stopped growing (both cap pending learns at 1000, so a
storm loses some), and for ours the main-loop iterations during the storm
(``OVN_CONTROLLER_PY_TIMELINE``): count, max and p99.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from integration.sandbox import Sandbox

RTR_MAC, RTR_IP, VM_MAC = "00:00:00:00:ff:01", "10.0.0.1", "50:54:00:00:00:03"


def arp_reply(spa: str) -> str:
    def mac(t: str) -> bytes:
        return bytes.fromhex(t.replace(":", ""))

    def ip(t: str) -> bytes:
        return bytes(int(x) for x in t.split("."))
    return (mac(RTR_MAC) + mac(VM_MAC) + b"\x08\x06" + bytes.fromhex("0001080006040002")
            + mac(VM_MAC) + ip(spa) + mac(RTR_MAC) + ip(RTR_IP)).hex()


def mac_binding_count(sb: Sandbox) -> int:
    return len(sb.sbctl("--bare", "--columns=_uuid", "list", "MAC_Binding").split())


def run(kind: str, n: int, timeline: Path) -> str:
    sb = Sandbox(northd=True)
    try:
        sb.start()
        sb.nbctl("--no-wait", "ls-add", "ls1", "--", "lsp-add", "ls1", "vm1",
                 "--", "lsp-set-addresses", "vm1", "unknown",
                 "--", "lr-add", "lr1", "--", "lrp-add", "lr1", "lr1-ls1", RTR_MAC, "10.0.0.1/16",
                 "--", "lsp-add", "ls1", "ls1-lr1", "--", "lsp-set-type", "ls1-lr1", "router",
                 "--", "lsp-set-addresses", "ls1-lr1", "router",
                 "--", "lsp-set-options", "ls1-lr1", "router-port=lr1-ls1")
        sb.bind_vif("vif1", "vm1", ofport=1)
        sb.nbctl("--wait=sb", "sync")
        sb.start_controller(kind)
        sb.wait_hv_sync(timeout=120, min_flows=50)
        frames = [arp_reply("10.0.%d.%d" % (1 + i // 250, 2 + i % 250)) for i in range(n)]
        t0 = time.monotonic()
        for i in range(0, n, 50):
            sb.appctl("ovs-vswitchd", "netdev-dummy/receive", "vif1", *frames[i:i + 50])
        injected = time.monotonic() - t0
        last, stable = -1, 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and stable < 4:
            count = mac_binding_count(sb)
            stable = stable + 1 if count == last else 0
            last = count
            time.sleep(0.5)
        total = time.monotonic() - t0
        line = "%-3s injected %d in %.1f s, MAC_Binding rows %d, settled after %.1f s" % (
            kind, n, injected, last, total)
        if kind == "py":
            rows = timeline.read_text().splitlines()
            ts = [float(r.split()[0][2:]) for r in rows]
            its = [float(r.split(" it=")[1].split("ms")[0]) for r in rows]
            storm = sorted(it for t, it in zip(ts, its) if t >= ts[-1] - total - 1)
            line += "; main loop during the storm: %d iterations, max %.0f ms, p99 %.0f ms" % (
                len(storm), storm[-1], storm[int(0.99 * (len(storm) - 1))])
        return line
    finally:
        sb.stop()


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    timeline = Path(tempfile.mkdtemp(prefix="ovnpy-storm-")) / "timeline.txt"
    os.environ["OVN_CONTROLLER_PY_TIMELINE"] = str(timeline)
    for kind in ("c", "py"):
        print(run(kind, n, timeline), flush=True)


if __name__ == "__main__":
    main()
