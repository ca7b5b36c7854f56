// Whole packets and their fragments, written out as hex. Built field by field and checked with
// `text2pcap -l 101` + `tshark -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE -V`: tshark
// reassembles each pair of fragments and finds the UDP checksum of the whole datagram correct.
import SluiceTestSupport

extension Fixture {
    /// IPv4 UDP 93.184.216.34:53 → 10.0.0.2:40000, id 0x0102, DF, TTL 64, "reply!". What `UDPPacket`
    /// writes. IP checksum 0xf9ec, UDP checksum 0xc78c.
    static let ipv4UDPReply = hex("""
        45000022 01024000 4011f9ec 5db8d822 0a000002
        00359c40 000ec78c 7265706c 7921
        """)

    /// IPv6 UDP [2001:db8::1]:53 → [fd00::2]:40000, "reply!". UDP checksum 0xdcac.
    static let ipv6UDPReply = hex("""
        60000000 000e1140
        20010db8 00000000 00000000 00000001
        fd000000 00000000 00000000 00000002
        00359c40 000edcac 7265706c 7921
        """)

    /// IPv4 UDP 10.0.0.1:1000 → 10.0.0.2:2000, id 0x1234, DF, with options router alert (copied),
    /// record route (not copied) and end of list: IHL 8. 40 data bytes 00…27.
    static let ipv4WithOptions = hex("""
        48000050 12344000 4011725b 0a000001 0a000002
        94040000 07070400 00000000
        03e807d0 00306242
        00010203 04050607 08090a0b 0c0d0e0f 10111213 14151617 18191a1b 1c1d1e1f 20212223 24252627
        """)

    /// `ipv4WithOptions` fragmented for MTU 56: the whole header and 24 bytes with MF, DF cleared…
    static let ipv4WithOptionsFragment1 = hex("""
        48000038 12342000 40119273 0a000001 0a000002
        94040000 07070400 00000000
        03e807d0 00306242 00010203 04050607 08090a0b 0c0d0e0f
        """)

    /// …then the fixed header with the router alert only (IHL 6), offset 24, the last 24 bytes.
    static let ipv4WithOptionsFragment2 = hex("""
        46000030 12340003 4011bf7f 0a000001 0a000002
        94040000
        10111213 14151617 18191a1b 1c1d1e1f 20212223 24252627
        """)

    /// IPv6 UDP [fd00::1]:1000 → [fd00::2]:2000 behind a hop-by-hop header (PadN) and a destination
    /// options header (PadN); 40 data bytes 00…27.
    static let ipv6WithExtensions = hex("""
        60000000 00400040
        fd000000 00000000 00000000 00000001
        fd000000 00000000 00000000 00000002
        3c000104 00000000
        11000104 00000000
        03e807d0 00307c40
        00010203 04050607 08090a0b 0c0d0e0f 10111213 14151617 18191a1b 1c1d1e1f 20212223 24252627
        """)

    /// `ipv6WithExtensions` fragmented for MTU 88, identification 0xdeadbeef: the hop-by-hop header
    /// stays in front (its next header now 44), the destination options go with the data…
    static let ipv6WithExtensionsFragment1 = hex("""
        60000000 00300040
        fd000000 00000000 00000000 00000001
        fd000000 00000000 00000000 00000002
        2c000104 00000000
        3c000001 deadbeef
        11000104 00000000 03e807d0 00307c40 00010203 04050607 08090a0b 0c0d0e0f
        """)

    /// …and the rest at offset 32.
    static let ipv6WithExtensionsFragment2 = hex("""
        60000000 00280040
        fd000000 00000000 00000000 00000001
        fd000000 00000000 00000000 00000002
        2c000104 00000000
        3c000020 deadbeef
        10111213 14151617 18191a1b 1c1d1e1f 20212223 24252627
        """)
}
