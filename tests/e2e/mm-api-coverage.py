#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# How much of ModemManager's D-Bus API qmapd serves, counted against ModemManager's own
# introspection files (modemmanager-dev: /usr/share/dbus-1/interfaces) and read from qmapd's
# D-Bus sources (src/daemon/dbus/):
#   - an interface is exported when the sources create its skeleton;
#   - a method is implemented when a handler is connected to its handle-* signal, otherwise
#     an exported interface answers it Core.Unsupported (mm-dbus-unsupported.c);
#   - a property comes from the modem when its setter is called outside a function whose name
#     says "unknowns" (those set the documented unknown value once); else it is constant;
#   - a signal is emitted when its emit function is called.
# With --check-log, the Unsupported counts are checked against what mm-call-every-method.py
# saw on a running qmapd (the calls answered "... is not supported by qmapd"): the static
# reading must agree with the bus. Prints a Markdown table; exits 1 on a disagreement.
# Usage: mm-api-coverage.py [--xml-dir DIR] [--check-log FILE] SRCDIR
import argparse
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET

MMI = "org.freedesktop.ModemManager1"
# libmm-glib's C prefix for each interface (its generated mm-gdbus-*.h).
PREFIX = {
    MMI: "org_freedesktop_modem_manager1",
    MMI + ".Modem": "modem",
    MMI + ".Modem.Simple": "modem_simple",
    MMI + ".Modem.Modem3gpp": "modem3gpp",
    MMI + ".Modem.Modem3gpp.Ussd": "modem3gpp_ussd",
    MMI + ".Modem.Modem3gpp.ProfileManager": "modem3gpp_profile_manager",
    MMI + ".Modem.ModemCdma": "modem_cdma",
    MMI + ".Modem.Location": "modem_location",
    MMI + ".Modem.Messaging": "modem_messaging",
    MMI + ".Modem.Signal": "modem_signal",
    MMI + ".Modem.Time": "modem_time",
    MMI + ".Modem.Voice": "modem_voice",
    MMI + ".Modem.Firmware": "modem_firmware",
    MMI + ".Modem.Oma": "modem_oma",
    MMI + ".Modem.Sar": "modem_sar",
    MMI + ".Sim": "sim",
    MMI + ".Sms": "sms",
    MMI + ".Bearer": "bearer",
    MMI + ".Call": "call",
}


def norm(name):
    return name.replace("_", "").replace("-", "").lower()


def type_to_prefix(c_type):
    """MmGdbusModem3gppUssd -> modem3gpp_ussd, by matching the normalized names."""
    want = norm(c_type[len("MmGdbus"):])
    for p in PREFIX.values():
        if norm(p) == want:
            return p
    return None


def load_api(xml_dir):
    api = {}
    for f in sorted(glob.glob(os.path.join(xml_dir, MMI + "*.xml"))):
        for i in ET.parse(f).getroot().iter("interface"):
            api[i.get("name")] = {k: [e.get("name") for e in i.findall(k)]
                                  for k in ("method", "property", "signal")}
    return api


def enclosing_function(lines, k):
    """The name of the function whose body holds line k (definitions start in column 0)."""
    for j in range(k, -1, -1):
        m = re.match(r"^[A-Za-z_][\w \*]*?\b(\w+)\(", lines[j])
        if m and not lines[j].startswith(("typedef", "#")):
            return m.group(1)
    return ""


def read_sources(src):
    files = {}
    for f in sorted(glob.glob(os.path.join(src, "src/daemon/dbus/*.[ch]"))):
        with open(f, encoding="utf-8") as fh:
            files[f] = fh.read().splitlines()
    return files


def struct_fields(files):
    """(struct name, field) -> prefix, from "struct mmd_modem { ... MmGdbusModem *iface; ...}"."""
    fields, current = {}, None
    for lines in files.values():
        for line in lines:
            m = re.match(r"^struct (\w+) \{", line)
            if m:
                current = m.group(1)
            elif line.startswith("};"):
                current = None
            elif current:
                for d in re.finditer(r"\bMmGdbus(\w+)\s*\*\s*(\w+)", line):
                    p = type_to_prefix("MmGdbus" + d.group(1))
                    if p:
                        fields[(current, d.group(2))] = p
    return fields


def resolve(expr, f, k, decls, fields, files):
    """The interface prefix of the skeleton expression used at file f, line k: "mm->sim" by
    the type of mm's struct, "i" by its nearest declaration before the use."""
    lines = files[f]
    m = re.fullmatch(r"(\w+)\s*->\s*(\w+)", expr)
    if m:
        for j in range(k, -1, -1):
            d = re.search(r"\bstruct (\w+)\s*\*\s*" + m.group(1) + r"\b", lines[j])
            if d:
                return fields.get((d.group(1), m.group(2)))
        return None
    same = [c for c in decls.get(expr, []) if c[0] == f and c[1] <= k]
    return max(same, key=lambda c: c[1])[2] if same else None


def scan(files):
    prefixes = sorted(PREFIX.values(), key=len, reverse=True)
    exported, handled, set_in, emitted = set(), set(), {}, set()
    # identifier -> [(file, line, prefix)] from declarations such as "MmGdbusSim *sim;"
    decls = {}
    for f, lines in files.items():
        for k, line in enumerate(lines):
            for m in re.finditer(r"\bMmGdbus(\w+)\s*\*\s*(\w+)", line):
                p = type_to_prefix("MmGdbus" + m.group(1))
                if p:
                    decls.setdefault(m.group(2), []).append((f, k, p))
    fields = struct_fields(files)
    for f, lines in files.items():
        for k, line in enumerate(lines):
            for m in re.finditer(r"\bmm_gdbus_(\w+)_skeleton_new\b", line):
                if m.group(1) in PREFIX.values():
                    exported.add(m.group(1))
            for m in re.finditer(r"\bmm_gdbus_(\w+)\(", line):
                fn = m.group(1)
                for p in prefixes:
                    for verb, into in (("_set_", "set"), ("_emit_", "emit")):
                        if fn.startswith(p + verb):
                            member = norm(fn[len(p + verb):])
                            if into == "set":
                                set_in.setdefault((p, member), set()).add(
                                    enclosing_function(lines, k))
                            else:
                                emitted.add((p, member))
                            break
                    else:
                        continue
                    break
            m = re.search(r"g_signal_connect\w*\(\s*([^,]+),\s*\"handle-([a-z0-9-]+)\"", line)
            if m:
                p = resolve(m.group(1).strip(), f, k, decls, fields, files)
                if p is None:
                    print(f"cannot tell the interface of {m.group(1)} at {f}:{k + 1}",
                          file=sys.stderr)
                    continue
                handled.add((p, norm(m.group(2))))
    return exported, handled, set_in, emitted


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--xml-dir", default="/usr/share/dbus-1/interfaces")
    ap.add_argument("--check-log")
    ap.add_argument("src")
    a = ap.parse_args()
    api = load_api(a.xml_dir)
    if not api:
        print(f"no ModemManager introspection files in {a.xml_dir} (modemmanager-dev)",
              file=sys.stderr)
        return 2
    exported, handled, set_in, emitted = scan(read_sources(a.src))
    rows, total, unsupported_of = [], {}, {}
    print("| interface | methods: implemented / Unsupported | properties: from the modem / "
          "constant | signals: emitted / never | not exported |")
    print("|---|---|---|---|---|")
    for name in sorted(api, key=lambda n: (n != MMI, n)):
        p, m = PREFIX[name], api[name]
        n_all = sum(len(v) for v in m.values())
        short = name[len(MMI) + 1:] or "(manager)"
        if p not in exported:
            row = (short, "-", "-", "-", n_all)
        else:
            impl = sum((p, norm(x)) in handled for x in m["method"])
            live = sum(any("unknown" not in fn for fn in set_in.get((p, norm(x)), ()))
                       for x in m["property"])
            emit = sum((p, norm(x)) in emitted for x in m["signal"])
            unsupported_of[name] = len(m["method"]) - impl
            row = (short, (impl, len(m["method"]) - impl), (live, len(m["property"]) - live),
                   (emit, len(m["signal"]) - emit), 0)
        rows.append(row)
        print("| " + " | ".join(c if isinstance(c, str) else
                                 (f"{c[0]} / {c[1]}" if isinstance(c, tuple) else str(c))
                                 for c in row) + " |")
    for key, col in (("methods", 1), ("properties", 2), ("signals", 3)):
        total[key] = [sum(r[col][i] for r in rows if isinstance(r[col], tuple)) for i in (0, 1)]
    total["absent"] = sum(r[4] for r in rows)
    print(f"| **all {sum(len(v) for m in api.values() for v in m.values())} members** | "
          f"{total['methods'][0]} / {total['methods'][1]} | "
          f"{total['properties'][0]} / {total['properties'][1]} | "
          f"{total['signals'][0]} / {total['signals'][1]} | {total['absent']} |")
    if not a.check_log:
        return 0
    # mm-call-every-method.py prints each call and its error; an implemented method may
    # answer Unsupported for its dummy arguments, so only "not supported by qmapd" (the
    # answer of mm-dbus-unsupported.c) counts as not implemented.
    seen, on_bus = set(), {}
    with open(a.check_log, encoding="utf-8") as fh:
        for line in fh:
            m = re.match(r"^(\S+): \d+ methods, ", line)
            if m:
                seen.add(m.group(1))
                continue
            m = re.match(r"^\s+(\S+)\.(\w+)\(.*Core\.Unsupported: (\w+) is not supported by "
                         r"qmapd", line)
            if m and m.group(2) == m.group(3):
                on_bus[m.group(1)] = on_bus.get(m.group(1), 0) + 1
    bad = 0
    for name in sorted(seen & set(unsupported_of)):
        if on_bus.get(name, 0) != unsupported_of[name]:
            print(f"FAIL: {name}: {on_bus.get(name, 0)} methods answered that qmapd does not "
                  f"implement them, the sources say {unsupported_of[name]}")
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
