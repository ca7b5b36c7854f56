// ICMP and ICMPv6 packets written out as hex, built field by field and checked with
// `text2pcap -l 101` + `tshark -o ip.check_checksum:TRUE -V`: every field decodes as named and every
// checksum (outer and quoted) is "correct".
import SluiceTestSupport

extension Fixture {
    /// IPv4 echo request 10.0.0.2 → 93.184.216.34, TOS 0x10, id 0xbeef, DF, identifier 0x1234,
    /// sequence 1, data "sluice ping" (11 bytes, odd). IP checksum 0x3bfa, ICMP checksum 0xa8b0.
    static let ipv4EchoRequest = hex("""
        45100027 beef4000 40013bfa 0a000002 5db8d822
        0800a8b0 12340001 736c7569 63652070 696e67
        """)

    /// What `ICMPEchoReply` answers to `ipv4EchoRequest`: addresses swapped, TOS kept, id 0, DF,
    /// TTL 64, type 0. IP checksum 0xfae9, ICMP checksum 0xb0b0.
    static let ipv4EchoReply = hex("""
        45100027 00004000 4001fae9 5db8d822 0a000002
        0000b0b0 12340001 736c7569 63652070 696e67
        """)

    /// IPv6 echo request [fd00::2] → [2001:db8::1], traffic class 0xb8, flow label 0x12345, behind a
    /// destination options header (PadN); identifier 0xabcd, sequence 7, "sluice ping6". ICMPv6
    /// checksum 0x6bcf.
    static let ipv6EchoRequest = hex("""
        6b812345 001c3c40
        fd000000 00000000 00000000 00000002
        20010db8 00000000 00000000 00000001
        3a000104 00000000
        80006bcf abcd0007 736c7569 63652070 696e6736
        """)

    /// The reply to `ipv6EchoRequest`: no extension header, traffic class kept, flow label 0, hop
    /// limit 64, type 129. ICMPv6 checksum 0x6acf.
    static let ipv6EchoReply = hex("""
        6b800000 00143a40
        20010db8 00000000 00000000 00000001
        fd000000 00000000 00000000 00000002
        81006acf abcd0007 736c7569 63652070 696e6736
        """)

    /// Port unreachable from 8.8.8.8 about `ipv4UDP`, quoted whole. TOS 0xc0, DF, TTL 64. IP
    /// checksum 0x6826, ICMP checksum 0xcef5.
    static let ipv4PortUnreachable = hex("""
        45c00055 00004000 40016826 08080808 c0a8010a
        0303cef5 00000000
        """) + ipv4UDP

    /// Fragmentation needed, next-hop MTU 1400, from 8.8.8.8 about `ipv4UDP`. ICMP checksum 0xc97c.
    static let ipv4FragmentationNeeded = hex("""
        45c00055 00004000 40016826 08080808 c0a8010a
        0304c97c 00000578
        """) + ipv4UDP

    /// IPv6 UDP [fd00::2]:40000 → [2001:db8::1]:53, "query". UDP checksum 0xe8b9.
    static let ipv6UDP = hex("""
        60000000 000d1140
        fd000000 00000000 00000000 00000002
        20010db8 00000000 00000000 00000001
        9c400035 000de8b9 71756572 79
        """)

    /// ICMPv6 port unreachable (1/4) from [2001:db8::1] about `ipv6UDP`. Checksum 0x6298.
    static let ipv6PortUnreachable = hex("""
        60000000 003d3a40
        20010db8 00000000 00000000 00000001
        fd000000 00000000 00000000 00000002
        01046298 00000000
        """) + ipv6UDP

    /// ICMPv6 Packet Too Big, MTU 1280, from [2001:db8::1] about `ipv6UDP`. Checksum 0x5c9c.
    static let ipv6PacketTooBig = hex("""
        60000000 003d3a40
        20010db8 00000000 00000000 00000001
        fd000000 00000000 00000000 00000002
        02005c9c 00000500
        """) + ipv6UDP

    /// Host unreachable (3/1) from 1.1.1.1 about a 100-byte UDP datagram 10.0.0.2:5000 → 1.1.1.1:53,
    /// the quote rebuilt from those fields: IPv4 header (total 128, DF, TTL 64, checksum 0x2e6a) and
    /// UDP header (length 108, checksum 0). ICMP checksum 0xe8d5.
    static let ipv4HostUnreachableRebuilt = hex("""
        45c00038 00004000 40012e02 01010101 0a000002
        0301e8d5 00000000
        45000080 00004000 40112e6a 0a000002 01010101
        13880035 006c0000
        """)

    /// Address unreachable (1/3) from [2001:db8::53] about a 100-byte UDP datagram
    /// [fd00::2]:5000 → [2001:db8::53]:53, the quote rebuilt. ICMPv6 checksum 0x2297.
    static let ipv6AddressUnreachableRebuilt = hex("""
        60000000 00383a40
        20010db8 00000000 00000000 00000053
        fd000000 00000000 00000000 00000002
        01032297 00000000
        60000000 006c1140
        fd000000 00000000 00000000 00000002
        20010db8 00000000 00000000 00000053
        13880035 006c0000
        """)
}
