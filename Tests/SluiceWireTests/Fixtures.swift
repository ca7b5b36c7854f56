// Real packets, written out as hex. Each was built by hand field by field and checked with
// `text2pcap -l 101` + `tshark -o tcp.check_checksum:TRUE ...`: tshark decodes every field as named
// here and reports every checksum "Good".
import SluiceTestSupport

enum Fixture {
    /// IPv4 TCP SYN 10.0.0.2:54321 → 93.184.216.34:443, id 0x1c46, DF, TTL 64, seq 0x12345678,
    /// window 64240, options MSS 1460, SACK permitted, timestamps 1000/0, NOP, window scale 7
    /// (Linux's SYN layout). IP checksum 0xde99, TCP checksum 0xcab1.
    static let ipv4TCPSyn = hex("""
        4500003c 1c464000 4006de99 0a000002 5db8d822
        d43101bb 12345678 00000000 a002faf0 cab10000
        020405b4 0402080a 000003e8 00000000 01030307
        """)

    /// IPv6 TCP SYN [fd00::2]:40000 → [2001:db8::1]:80, flow label 0x12345, hop limit 64,
    /// seq 0xdeadbeef, window 65535, options MSS 1440, NOP, window scale 9. TCP checksum 0x1f40.
    static let ipv6TCPSyn = hex("""
        60012345 001c0640
        fd000000 00000000 00000000 00000002
        20010db8 00000000 00000000 00000001
        9c400050 deadbeef 00000000 7002ffff 1f400000
        020405a0 01030309
        """)

    /// IPv4 UDP 192.168.1.10:5353 → 8.8.8.8:53, id 0x4242, no DF, TTL 17, a 29-byte DNS query for
    /// example.com A. IP checksum 0x95b0, UDP checksum 0x9d88.
    static let ipv4UDP = hex("""
        45000039 42420000 111195b0 c0a8010a 08080808
        14e90035 00259d88
        abcd0100 00010000 00000000 07657861 6d706c65 03636f6d 00000100 01
        """)

    /// IPv6 [fe80::1] → [ff02::16], hop limit 1, a hop-by-hop header (router alert 0, PadN),
    /// then a fragment header (offset 0, M set, id 0xcafe0001), then UDP 1000 → 2000 with the
    /// 16-byte payload "sluice fragment!" (UDP checksum 0xd66b).
    static let ipv6HopByHopFragment = hex("""
        60000000 00280001
        fe800000 00000000 00000000 00000001
        ff020000 00000000 00000000 00000016
        2c000502 00000100
        11000001 cafe0001
        03e807d0 0018d66b 736c7569 63652066 7261676d 656e7421
        """)

    /// IPv6 [2001:db8::2] → [2001:db8::3]: a non-first fragment (offset 16, M clear, id 0xcafe0001)
    /// of a UDP datagram, carrying the 8 bytes "tail end".
    static let ipv6LaterFragment = hex("""
        60000000 00102c40
        20010db8 00000000 00000000 00000002
        20010db8 00000000 00000000 00000003
        11000010 cafe0001
        7461696c 20656e64
        """)

    /// IPv4 10.1.1.1 → 10.2.2.2 UDP fragment: MF set, offset 24 bytes (3 units), id 7, "12345678".
    static let ipv4Fragment = hex("""
        4500001c 00072003 401143c2 0a010101 0a020202
        31323334 35363738
        """)

    /// IPv4 TCP 172.16.0.5:8080 → 172.16.0.9:50000, PSH|ACK, seq 1000, ack 2000, window 502,
    /// payload "hello, world". IP checksum 0xe294, TCP checksum 0x26b7.
    static let ipv4TCPData = hex("""
        45000034 00014000 4006e294 ac100005 ac100009
        1f90c350 000003e8 000007d0 501801f6 26b70000
        68656c6c 6f2c2077 6f726c64
        """)
}
