#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Hand-written seed inputs for every libFuzzer target, one directory per target.

The seeds give each fuzzer the structure random bytes almost never find (a JSON request with
a "command", a [device] section, a QMUX message whose two length fields agree, a TCP
segment with a valid IPv4 header): unseeded, fuzz-control reached 46 edges in 11.5 M runs.
tests/fuzz/run.sh --minimize grows a corpus from these and keeps the smallest set with the
same coverage in tests/fuzz/corpus/<target>/; this script only writes the starting points:

    tests/fuzz/make-seeds.py OUTDIR
"""
import os
import struct
import sys


def ipv4_tcp(payload=b"x" * 40, seq=1000, src=0xC0000202, dst=0xC6336401, flags=0x18, ihl_opts=b""):
    tcp = struct.pack("!HHIIBBHHH", 40000, 5201, seq, 0, 5 << 4, flags, 65535, 0, 0)
    total = 20 + len(ihl_opts) + len(tcp) + len(payload)
    ihl = 5 + len(ihl_opts) // 4
    ip = struct.pack("!BBHHHBBHII", 0x40 | ihl, 0, total, 1, 0x4000, 64, 6, 0, src, dst)
    return ip + ihl_opts + tcp + payload


def ipv4_udp(payload=b"u" * 32, src=0xC0000202, dst=0xC6336401):
    udp = struct.pack("!HHHH", 40000, 9, 8 + len(payload), 0)
    total = 20 + len(udp) + len(payload)
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, total, 1, 0x4000, 64, 17, 0, src, dst)
    return ip + udp + payload


def ipv6_tcp(payload=b"y" * 40, seq=1000, flags=0x18):
    tcp = struct.pack("!HHIIBBHHH", 40000, 5201, seq, 0, 5 << 4, flags, 65535, 0, 0)
    src = bytes.fromhex("20010db8000100000000000000000002")
    dst = bytes.fromhex("20010db800ff00000000000000000001")
    return struct.pack("!IHBB", 0x60000000, len(tcp) + len(payload), 6, 64) + src + dst + tcp + payload


def ipv6_udp(payload=b"v" * 32):
    udp = struct.pack("!HHHH", 40000, 9, 8 + len(payload), 0)
    src = bytes.fromhex("20010db8000100000000000000000002")
    dst = bytes.fromhex("20010db800ff00000000000000000001")
    return struct.pack("!IHBB", 0x60000000, len(udp) + len(payload), 17, 64) + src + dst + udp + payload


def qmap_data(pkt, mux=1, pad=0, v5=False, csum_valid=True):
    body = pkt + b"\0" * pad
    hdr = struct.pack("!BBH", (0x40 if v5 else 0) | pad, mux, len(body))
    if v5:
        hdr += struct.pack("!BBH", 2 << 1, 0x80 if csum_valid else 0, 0)
    return hdr + body


def qmap_cmd(name=1, ctype=0, mux=1, txid=7):
    body = struct.pack("!BBHIHHI", name, ctype, 0, txid, 0, 0, 0)
    return struct.pack("!BBH", 0x80, mux, len(body)) + body


def qmux(service, cid, msg_id, tlvs=b"", tid=1, flags=0):
    if service == 0:
        sdu = struct.pack("<BBHH", 0, tid, msg_id, len(tlvs)) + tlvs
    else:
        sdu = struct.pack("<BHHH", 0, tid, msg_id, len(tlvs)) + tlvs
    body = struct.pack("<HBBB", 5 + len(sdu), flags, service, cid) + sdu
    return b"\x01" + body


def tlv(t, v):
    return struct.pack("<BH", t, len(v)) + v


def mbim(mtype, payload=b"", tid=1):
    return struct.pack("<III", mtype, 12 + len(payload), tid) + payload


def vnet(flags=0, gso_type=0, hdr_len=0, gso_size=0, csum_start=0, csum_offset=0):
    return struct.pack("<BBHHHH", flags, gso_type, hdr_len, gso_size, csum_start, csum_offset)


def seeds():
    s = {}
    # ---- control: first byte = peer (odd: root), then one request line
    reqs = [
        '{"command":"status"}', '{"command":"mux-list"}', '{"command":"stats"}',
        '{"command":"reload"}', '{"command":"mux-del","id":3}',
        '{"command":"mux-add","id":3}',
        '{"command":"mux-add","id":4,"settings":{"apn":"internet","ip-type":"ipv4v6"}}',
        '{"command":"mux-add","id":5,"settings":{"interface":"wwan5","mtu":"1400",'
        '"headroom":"off","default-route":"yes","route-metric":"50"}}',
        '{"command":"mux-add","id":6,"settings":{"user":"alice","password":"secret",'
        '"allowed-auth":"chap","autoconnect":"no"}}',
        '{"command":"mux-add","id":7,"settings":{"ipv4-address":"192.0.2.2/32",'
        '"ipv6-address":"2001:db8::2/128","routes":"198.51.100.0/24 2001:db8:ff::/48"}}',
        '{"command":"mux-add","id":255}', '{"command":"nope"}', '{"id":1}', '[]',
        '{"command":"status","extra":1}', '{"command":"mux-add","id":"3"}',
    ]
    s["fuzz-control"] = [bytes([p]) + r.encode() for r in reqs for p in (0, 1)][:24]
    # ---- config: a file
    full = open(os.path.join(os.path.dirname(__file__), "../../conf/qmapd.conf"), "rb").read()
    s["fuzz-config"] = [
        full,
        b"[device]\ndevice = usb:2c7c:0125\n\n[mux.1]\napn = internet\ndefault-route = yes\n",
        b"[device]\ndevice = sim:/run/sim.sock\ncontrol = none\nqmap-version = 5\n"
        b"dl-max-size = 16384\nrx-transfers = 32\nul-max-size = 8192\nul-max-datagrams = 16\n"
        b"max-packet-size = 512\npersist-devices = yes\ncontrol-link = /run/qmapd/qmi0\n"
        b"open-timeout = 15\n"
        b"control-socket = /run/qmapd/control\nadmin-group = netdev\n\n[mux.2]\n"
        b"interface = wwan2\nip-type = ipv6\nallowed-auth = pap\nuser = u\npassword = p\n"
        b"mtu = 1400\nheadroom = xdp\nipv4-address = 192.0.2.2/24\n"
        b"ipv6-address = 2001:db8::2/64\nroutes = 198.51.100.0/24 2001:db8:ff::/48\n"
        b"route-metric = 100\nautoconnect = no\n",
        b"[device]\ndevice = usb-path:1-1.4:4\n[mux.254]\n[mux.1]\ninterface = qmap%d\n",
        b"; comment\n# comment\n[device]\ndevice=usb:05c6:9025\nqmap-version=1\n",
        # several modems: discovery, [modem.NAME] and its muxes, exclude, name
        b"[device]\ndevice = auto\ndl-max-size = 32768\n"
        b"exclude = usb:1199:9071 usb-path:3-1.2\nexclude = usb-serial:XYZ1\n"
        b"[mux.1]\napn = internet\n",
        b"[modem.lte]\ndevice = usb:2c7c:0125\nqmap-version = 1\n[modem.lte.mux.1]\n"
        b"apn = a\n[modem.lte.mux.2]\ninterface = wwan2\n[modem.b-2]\n"
        b"device = usb-serial:ABC123\ncontrol-link = /dev/cdc-wdm1\n[modem.b-2.mux.1]\n"
        b"[device]\ncontrol-socket = /run/qmapd/control\n",
        b"[modem.x.mux.3]\nip-type = ipv4\nmtu = 576\n[modem.x]\ndevice = usb-path:1-1.4:4\n"
        b"persist-devices = yes\nuplink-rate = 20M\nopen-timeout = 3\n[modem.y]\n"
        b"device = sim:/run/sim.sock\n"
        b"control = none\n[mux.254]\n",
        b"[device]\nname = modem_1\ndevice = usb:2c7c:0125\n[mux.1]\n",
    ]
    # ---- usb-spec: the device value
    s["fuzz-usb-spec"] = [x.encode() for x in (
        "usb:2c7c:0125", "usb:2c7c:0125:4", "usb-path:1-1.4", "usb-path:1-1.4.2:4",
        "usb:05c6:9025:255", "usb-path:12-3.1.1.1.1.1.1", "usb:0:0", "usb:ffff:ffff:0")]
    # A leading NUL byte: the rest is an MBIM function's class-specific descriptors.
    hdr = bytes.fromhex("0524001001")
    union = bytes.fromhex("0524060c0d")
    mfd = bytes.fromhex("0c241b0001001020800008") + b"\x20"
    ext = bytes.fromhex("08241c000140dc05")
    ep = bytes.fromhex("07058103400009")
    s["fuzz-usb-spec"] += [b"\0" + hdr + union + mfd + ext, b"\0" + mfd, b"\0" + hdr + ep + mfd,
                           b"\0" + union + mfd[:11] + ext, b"\0" + mfd + mfd + ext + ext]
    # ---- mbim-frag: fragment size byte, then [u16 len][message]...
    def cmd(tid, total, cur, body):
        return struct.pack("<IIIII", 3, 20 + len(body), tid, total, cur) + body
    def rec(m):
        return struct.pack("<H", len(m)) + m
    mopen = struct.pack("<IIII", 1, 16, 1, 4096)
    s["fuzz-mbim-frag"] = [
        b"\x1c" + rec(mopen) + rec(cmd(2, 1, 0, bytes(range(256)) * 5)),
        b"\x00" + rec(cmd(3, 2, 0, b"a" * 300)) + rec(cmd(3, 2, 1, b"b" * 200)),
        b"\xff" + rec(cmd(4, 3, 0, b"x" * 40)) + rec(cmd(4, 3, 2, b"y")) + rec(cmd(5, 1, 0, b"")),
        b"\x10" + rec(cmd(6, 2, 0, b"q" * 100)) + rec(cmd(7, 1, 0, b"r" * 1000)),
    ]
    # ---- qmap: first byte = version (odd: v5), then one aggregate
    v1 = qmap_data(ipv4_tcp()) + qmap_data(ipv6_udp(), mux=2, pad=2) + qmap_cmd()
    v5 = qmap_data(ipv4_udp(), v5=True) + qmap_data(ipv6_tcp(), mux=3, v5=True, csum_valid=False)
    s["fuzz-qmap"] = [b"\0" + v1, b"\1" + v5, b"\0" + qmap_cmd(2, 0, 4) + qmap_cmd(1, 1),
                      b"\1" + qmap_cmd() + qmap_data(ipv4_tcp(), v5=True), b"\0" + b"\0" * 8]
    # ---- gro: config byte, then [u16 len][flags][packet]...
    def gro_in(cfg, pkts, flush_last=False):
        out = bytes([cfg])
        for i, p in enumerate(pkts):
            fl = 1 | (0x80 if flush_last and i == len(pkts) - 1 else 0)
            out += struct.pack("!HB", len(p), fl) + p
        return out
    tcp4 = [ipv4_tcp(seq=1000 + 40 * i) for i in range(4)]
    tcp6 = [ipv6_tcp(seq=1000 + 40 * i) for i in range(4)]
    udp4 = [ipv4_udp() for _ in range(3)]
    s["fuzz-gro"] = [gro_in(0x00, tcp4), gro_in(0x04, tcp6), gro_in(0x08, udp4),
                     gro_in(0x1c, tcp4 + tcp6 + udp4, True),
                     gro_in(0x00, [ipv4_tcp(flags=0x11), ipv4_tcp(seq=1040)]),
                     gro_in(0x00, [ipv4_tcp(ihl_opts=b"\x01\x01\x01\x00")]),
                     gro_in(0x20, [ipv6_udp(), ipv6_udp()])]
    # ---- gso: vnet header, option byte, packet
    big4 = ipv4_tcp(payload=b"z" * 4000)
    big6 = ipv6_tcp(payload=b"z" * 3000)
    bigu = ipv4_udp(payload=b"w" * 3000)
    s["fuzz-gso"] = [
        vnet(1, 1, 40, 1448, 20, 16) + b"\0" + big4,
        vnet(1, 4, 60, 1428, 40, 16) + b"\1" + big6,
        vnet(1, 5, 28, 1400, 20, 6) + b"\2" + bigu,
        vnet(1, 0, 0, 0, 20, 16) + b"\0" + ipv4_tcp(),
        vnet(0, 0, 0, 0, 0, 0) + b"\3" + ipv6_udp(),
    ]
    # ---- sim-qmi: [u8 fixup<<7 | len][message]...
    def sq(*msgs):
        out = b""
        for m in msgs:
            assert len(m) < 128
            out += bytes([len(m)]) + m
        return out
    alloc_wds = qmux(0, 0, 0x22, tlv(1, b"\x01"))
    ver = qmux(0, 0, 0x21)
    dms = [qmux(2, 1, m) for m in (0x20, 0x21, 0x22, 0x23, 0x25)]
    nas = [qmux(3, 1, m) for m in (0x20, 0x24, 0x4F)]
    wda_set = qmux(0x1a, 1, 0x20, tlv(0x11, struct.pack("<I", 2)) + tlv(0x12, struct.pack("<I", 9)) +
                   tlv(0x13, struct.pack("<I", 9)) + tlv(0x15, struct.pack("<I", 32)) +
                   tlv(0x16, struct.pack("<I", 16384)) + tlv(0x17, struct.pack("<II", 2, 1)))
    wds = [qmux(1, 1, 0xA2, tlv(0x10, struct.pack("<II", 2, 0x81)) + tlv(0x11, struct.pack("<I", 1))),
           qmux(1, 1, 0x4D, tlv(1, b"\x04")),
           qmux(1, 1, 0x20, tlv(0x14, b"internet")),
           qmux(1, 1, 0x2D, tlv(0x10, struct.pack("<I", 0xffff))),
           qmux(1, 1, 0x22), qmux(1, 1, 0x21, tlv(1, struct.pack("<I", 1)))]
    s["fuzz-sim-qmi"] = [sq(ver, alloc_wds), sq(*dms), sq(*nas), sq(wda_set, qmux(0x1a, 1, 0x21)),
                         sq(*wds), sq(qmux(0, 0, 0x23, tlv(1, b"\x01\x02")), qmux(0, 0, 0x27)),
                         sq(qmux(0, 0, 0x26, tlv(1, b"\x01\x00")), qmux(9, 1, 0x20))]
    # UIM (service 0x0b): card status, EF_ICCID / EF_IMSI reads, Verify PIN; DMS and NAS extras;
    # WDS default profile and its settings
    mf, adf = b"\x02\x00\x3f", b"\x04\x00\x3f\xff\x7f"
    uim = [qmux(0x0b, 1, 0x2F),
           qmux(0x0b, 1, 0x20, tlv(1, b"\x06\x00") + tlv(2, b"\xe2\x2f" + mf) + tlv(3, bytes(4))),
           qmux(0x0b, 1, 0x20, tlv(1, b"\x00\x00") + tlv(2, b"\x07\x6f" + adf) + tlv(3, bytes(4))),
           qmux(0x0b, 1, 0x26, tlv(1, b"\x06\x00") + tlv(2, b"\x01\x04" + b"0000")),
           qmux(0x0b, 1, 0x26, tlv(1, b"\x06\x00") + tlv(2, b"\x01\x04" + b"1234"))]
    extra = [qmux(2, 1, m) for m in (0x24, 0x2C, 0x3C, 0x43, 0x45)] + [qmux(3, 1, 0x34)]
    prof = [qmux(1, 1, 0x49, tlv(1, b"\x00\x00")), qmux(1, 1, 0x2B, tlv(1, b"\x00\x01"))]
    s["fuzz-sim-qmi"] += [sq(*uim), sq(*extra), sq(*prof), sq(*uim[3:], *extra[:2]),
                          sq(*uim) + b"\0" * 32]
    # UIM PIN1 protection off/on, Unblock PIN (PUK, new PIN), Change PIN; three wrong PINs first
    slot1 = tlv(1, b"\x06\x00")
    codes = [qmux(0x0b, 1, 0x26, slot1 + tlv(2, b"\x01\x04" + b"0000"))] * 3 + [
        qmux(0x0b, 1, 0x27, slot1 + tlv(2, b"\x01\x08" + b"12345678" + b"\x04" + b"1111")),
        qmux(0x0b, 1, 0x25, slot1 + tlv(2, b"\x01\x00\x04" + b"1111")),
        qmux(0x0b, 1, 0x25, slot1 + tlv(2, b"\x01\x01\x04" + b"1111")),
        qmux(0x0b, 1, 0x28, slot1 + tlv(2, b"\x01\x04" + b"1111" + b"\x04" + b"2222"))]
    s["fuzz-sim-qmi"] += [sq(*codes), sq(*codes[3:], uim[0])]
    # NAS selection, scan, manual and automatic registration, network time
    radio = [qmux(3, 1, 0x33, tlv(0x11, struct.pack("<H", 0x10)) + tlv(0x15, struct.pack("<Q", 0x80004))),
             qmux(3, 1, 0x33, tlv(0x24, struct.pack("<QQQQ", 4, 0, 0, 0))),
             qmux(3, 1, 0x21),
             qmux(3, 1, 0x22, tlv(1, b"\x02") + tlv(0x10, struct.pack("<HHb", 1, 2, -1))),
             qmux(3, 1, 0x22, tlv(1, b"\x01")), qmux(3, 1, 0x7D)]
    s["fuzz-sim-qmi"] += [sq(alloc_wds, *radio)]
    # ---- wdm: first byte = framing (odd: MBIM) and piece pattern, then the client stream
    q = alloc_wds + dms[4] + wda_set
    m = mbim(1, struct.pack("<I", 4096)) + mbim(3, bytes(16) + struct.pack("<II", 1, 0)) + mbim(2)
    s["fuzz-wdm"] = [b"\0" + q, b"\x06" + q, b"\x01" + m, b"\x0b" + m, b"\x02" + b"\x42" + q + q[:7],
                     b"\x03" + b"\0\0" + m]
    # ---- sim-mbim: first byte even = control, then [le16 fixup<<15|drop<<14|reset<<13|len][msg]...
    #      first byte odd = uplink NTB: [divisor/alignment/remainder][max datagrams][NTB]
    def sm(cfg, *msgs):
        out = bytes([cfg])
        for m in msgs:
            out += struct.pack("<H", len(m)) + m
        return out
    basic = bytes.fromhex("a289cc33bcbb8b4fb6b0133ec2aae6df")
    internet = bytes.fromhex("7e5e2a7e4e6f7272736b656e7e5e2a7e")
    def mcmd(cid, ctype, info=b"", tid=2, service=basic):
        return mbim(3, struct.pack("<II", 1, 0) + service + struct.pack("<III", cid, ctype, len(info)) + info, tid)
    def utf16(x):
        return x.encode("utf-16-le")
    def connect_set(session=0, apn="internet", user="", password="", auth=0, ip_type=3, cmd=1):
        strs = b""
        pairs = []
        for t in (apn, user, password):
            u = utf16(t)
            pairs.append((60 + len(strs) if u else 0, len(u)))
            strs += u + b"\0" * (-len(u) % 4)
        info = struct.pack("<II", session, cmd)
        for off, ln in pairs:
            info += struct.pack("<II", off, ln)
        return info + struct.pack("<III", 0, auth, ip_type) + internet + strs
    opn = mbim(1, struct.pack("<I", 4096), 1)
    opn64 = mbim(1, struct.pack("<I", 64), 1)
    conn = mcmd(12, 1, connect_set(), 2)
    ipcfg = mcmd(15, 0, struct.pack("<I", 0) + bytes(56), 3)
    # A CONNECT set for session 1 in three fragments of one transaction.
    whole = mcmd(12, 1, connect_set(session=1, apn="corp", user="alice", password="s3cret", auth=2), 4)
    body = whole[20:]
    parts = [body[:40], body[40:80], body[80:]]
    fragmented = [mbim(3, struct.pack("<II", 3, i) + part, 4) for i, part in enumerate(parts)]
    s["fuzz-sim-mbim"] = [
        sm(0x00, opn),
        sm(0x00, opn, conn, ipcfg),
        sm(0x02, conn, ipcfg, mcmd(12, 0, struct.pack("<I", 0) + bytes(32), 5),
           mcmd(12, 1, connect_set(cmd=0), 6)),
        sm(0x82, *fragmented, mcmd(15, 0, struct.pack("<I", 1) + bytes(56), 5)),
        sm(0x12, opn64, mcmd(1, 0), mcmd(2, 0), mcmd(9, 0), mcmd(16, 0)),
        # VISIBLE_PROVIDERS, REGISTER_STATE set manual (00102) and automatic
        sm(0x02, opn, mcmd(8, 0, struct.pack("<I", 0)),
           mcmd(9, 1, struct.pack("<IIII", 16, 10, 1, 0) + utf16("00102") + b"\0\0"),
           mcmd(9, 1, struct.pack("<IIII", 0, 0, 0, 0))),
        sm(0x02, mcmd(3, 1, struct.pack("<I", 0)), mcmd(3, 0), mcmd(10, 1, struct.pack("<I", 1)),
           mcmd(10, 0), mcmd(19, 1, struct.pack("<I", 0))),
        sm(0x02, mcmd(12, 1, connect_set(session=253, ip_type=2), 7),
           mcmd(15, 0, struct.pack("<I", 253) + bytes(56), 8), mbim(4, struct.pack("<I", 2), 9),
           mbim(2, b"", 10)),
        sm(0x20, mcmd(1, 0), opn, mcmd(12, 1, connect_set(session=2, ip_type=1), 3),
           mcmd(1, 0, service=bytes.fromhex("d1a30bc2f97a6e43bf65c7e24fb0f0d3"))),
        # one session allowed, a second asked for; IPv6 on an IPv4-only mux; an APN longer
        # than any the modem knows; a message over wMaxControlMessage
        sm(0x22, conn, mcmd(12, 1, connect_set(session=1), 3)),
        sm(0x02, mcmd(12, 1, connect_set(session=1, ip_type=2), 2)),
        sm(0x02, mcmd(12, 1, connect_set(apn="a" * 300), 2)),
        sm(0x02, mcmd(19, 1, bytes(4200 - 48), 2), mcmd(19, 1, bytes(64), 3)),
    ]
    # MBIM_CID_PIN query and set (PinType, PinOperation, Pin, NewPin), PIN_LIST; a locked SIM
    def pin_set(ptype, op, pin, new=""):
        a, b = utf16(pin), utf16(new)
        return struct.pack("<IIIIII", ptype, op, 24 if a else 0, len(a), 24 + len(a) if b else 0,
                           len(b)) + a + b
    s["fuzz-sim-mbim"] += [
        sm(0x10, opn, mcmd(4, 0), mcmd(5, 0), mcmd(4, 1, pin_set(2, 0, "0000"), 3),
           mcmd(4, 1, pin_set(2, 0, "1234"), 4), mcmd(4, 1, pin_set(2, 3, "1234", "5678"), 5)),
        sm(0x10, opn, *[mcmd(4, 1, pin_set(2, 0, "0000"), 3 + i) for i in range(3)],
           mcmd(4, 1, pin_set(11, 0, "12345678", "1111"), 7), mcmd(4, 1, pin_set(2, 2, "1111"), 8)),
        sm(0x60, opn, mcmd(2, 0), mcmd(4, 0), mcmd(5, 0)),
    ]
    def ntb16(dgrams, seq=1, align=4):
        # datagrams after the NTH, each at a multiple of 4; one NDP per session at the end
        data = bytearray(12)
        idx = {}
        for sess, pkt in dgrams:
            data += b"\0" * (-len(data) % 4)
            idx.setdefault(sess, []).append((len(data), len(pkt)))
            data += pkt
        first = 0
        ndps = []
        for sess, entries in idx.items():
            data += b"\0" * (-len(data) % align)
            ndps.append(len(data))
            ndp = b"IPS" + bytes([sess]) + struct.pack("<HH", 8 + 4 * (len(entries) + 1), 0)
            ndp += b"".join(struct.pack("<HH", o, ln) for o, ln in entries) + bytes(4)
            data += ndp
        for i, off in enumerate(ndps):
            nxt = ndps[i + 1] if i + 1 < len(ndps) else 0
            struct.pack_into("<H", data, off + 6, nxt)
        struct.pack_into("<4sHHHH", data, 0, b"NCMH", 12, seq, len(data), ndps[0])
        return bytes(data)
    def ntb32(dgrams, seq=1, align=4):
        data = bytearray(16)
        idx = {}
        for sess, pkt in dgrams:
            data += b"\0" * (-len(data) % 4)
            idx.setdefault(sess, []).append((len(data), len(pkt)))
            data += pkt
        ndps = []
        for sess, entries in idx.items():
            data += b"\0" * (-len(data) % align)
            ndps.append(len(data))
            ndp = b"ips" + bytes([sess]) + struct.pack("<HHII", 16 + 8 * (len(entries) + 1), 0, 0, 0)
            ndp += b"".join(struct.pack("<II", o, ln) for o, ln in entries) + bytes(8)
            data += ndp
        for i, off in enumerate(ndps):
            nxt = ndps[i + 1] if i + 1 < len(ndps) else 0
            struct.pack_into("<I", data, off + 8, nxt)
        struct.pack_into("<4sHHII", data, 0, b"ncmh", 16, seq, len(data), ndps[0])
        return bytes(data)
    # cfg: bit0 uplink, bit1 NTB32, bits 2-3 repair, bits 4-5 dwNtbOutMaxSize choice
    # params byte: divisor 4 << (b & 3), alignment 4 << (b >> 2 & 3), remainder b >> 4
    s["fuzz-sim-mbim"] += [
        b"\x01\x00\x20" + ntb16([(0, ipv4_udp()), (0, ipv4_tcp()), (1, ipv6_udp())]),
        b"\x03\x00\x20" + ntb32([(0, ipv4_tcp()), (2, ipv6_tcp())]),
        b"\x01\x0c\x00" + ntb16([(0, ipv4_udp()), (1, ipv6_udp())], align=64),
        b"\x33\x00\x02" + ntb32([(0, ipv4_udp())] * 3),
    ]
    # fuzz-sim-ef: first byte picks the output buffer size, the rest is one EF's content
    spn = b"\x01" + b"qmapd test" + b"\xff" * 6
    s["fuzz-sim-ef"] = [
        b"\x20" + bytes.fromhex("989900010000000000f6"),
        b"\x20" + bytes.fromhex("080910100000000060"),
        b"\x20" + bytes.fromhex("00000002"),
        b"\x20" + spn,
        b"\x05" + spn,
        b"\x30" + b"\x01\x80\x00\x4e\x04\x1c\x20\xac\xff\xff",
    ]
    # fuzz-sms-pdu: an SMS-DELIVER with its SMSC address (also read as "number NUL text")
    s["fuzz-sms-pdu"] = [
        bytes.fromhex("07911326040000F0040B911346610089F60000208062917314080CC8F71D14969741F977FD07"),
        bytes.fromhex("00040B911346610089F600082080629173140A0A004800E920ACD83DDE00"),
        bytes.fromhex("00440B911346610089F600002080629173140809050003010201D069"),
        bytes.fromhex("000407D0D4F29C0E00F020806291731408049BF28607"),
        b"+46708251358\0hellohello",
        b"+1\0H\xc3\xa9\xf0\x9f\x98\x80",
    ]
    return s


def main():
    out = sys.argv[1]
    for target, inputs in seeds().items():
        d = os.path.join(out, target)
        os.makedirs(d, exist_ok=True)
        for i, data in enumerate(inputs):
            with open(os.path.join(d, "seed-%02d" % i), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
