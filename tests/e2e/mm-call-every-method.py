#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Calls every method of the named ModemManager interfaces on one object of the system bus
# (DBUS_SYSTEM_BUS_ADDRESS), as its introspection declares them, with dummy arguments of the
# right signature (gdbus call). Every answer must be a reply or one of ModemManager's errors
# (org.freedesktop.ModemManager1.Error.*), never UnknownMethod or another D-Bus error.
# Prints "IFACE: N methods, R replied, E ModemManager errors, U Unsupported" per interface
# and the calls that failed; exits 1 when any did.
# Usage: mm-call-every-method.py OBJECT-PATH INTERFACE...
import subprocess
import sys
import xml.etree.ElementTree as ET

DEST = "org.freedesktop.ModemManager1"
MM_ERROR = "org.freedesktop.ModemManager1.Error."
UNSUPPORTED = MM_ERROR + "Core.Unsupported"
BASIC = {"y": "byte 0", "b": "false", "n": "int16 0", "q": "uint16 0", "i": "int32 0",
         "u": "uint32 0", "x": "int64 0", "t": "uint64 0", "d": "0.0", "s": "''",
         "o": "objectpath '/'", "g": "signature ''", "h": "handle 0", "v": "<uint32 0>"}


def one_type(sig, k):
    """The complete type starting at sig[k]: (it, the index after it)."""
    c = sig[k]
    if c == "a":
        inner, end = one_type(sig, k + 1)
        return "a" + inner, end
    if c in "({":
        close = ")" if c == "(" else "}"
        j = k + 1
        while sig[j] != close:
            _, j = one_type(sig, j)
        return sig[k:j + 1], j + 1
    return c, k + 1


def dummy(sig):
    if sig.startswith("a{"):
        return f"@{sig} {{}}"
    if sig.startswith("a"):
        return f"@{sig} []"
    if sig.startswith("("):
        items, k = [], 1
        while sig[k] != ")":
            t, k = one_type(sig, k)
            items.append(dummy(t))
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    return BASIC[sig]


def main():
    path, ifaces = sys.argv[1], sys.argv[2:]
    xml = subprocess.run(["gdbus", "introspect", "--system", "--xml", "-d", DEST, "-o", path],
                         check=True, capture_output=True, text=True).stdout
    root = ET.fromstring(xml)
    bad = []
    for name in ifaces:
        node = root.find(f"interface[@name='{name}']")
        if node is None:
            bad.append(f"{path}: no interface {name}")
            continue
        counts = {"methods": 0, "replied": 0, "errors": 0, "unsupported": 0}
        for m in node.findall("method"):
            counts["methods"] += 1
            args = [dummy(a.get("type")) for a in m.findall("arg")
                    if a.get("direction", "in") == "in"]
            r = subprocess.run(["gdbus", "call", "--system", "--timeout", "20", "-d", DEST,
                                "-o", path, "-m", f"{name}.{m.get('name')}", "--"] + args,
                               capture_output=True, text=True)
            what = f"{name}.{m.get('name')}({', '.join(args)})"
            if r.returncode == 0:
                counts["replied"] += 1
            elif UNSUPPORTED + ":" in r.stderr:
                counts["unsupported"] += 1
            elif MM_ERROR in r.stderr:
                counts["errors"] += 1
            else:
                bad.append(f"{what}: {r.stderr.strip()}")
            print(f"  {what}: {'reply' if r.returncode == 0 else r.stderr.strip()[:160]}")
        print(f"{name}: {counts['methods']} methods, {counts['replied']} replied, "
              f"{counts['errors']} ModemManager errors, {counts['unsupported']} Unsupported")
    for b in bad:
        print("FAIL:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
