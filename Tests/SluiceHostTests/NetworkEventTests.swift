import XCTest
import SluiceWire

@testable import SluiceHost

/// The network monitor's parsing: notifications the kernel (Linux 6.x) multicast while a test made a
/// veth, gave it an address and a default route and took them away again, captured off a socket bound
/// to the same groups (`NetworkMonitor.groups`).
final class NetworkEventTests: XCTestCase {
    private func bytes(_ text: String) -> [UInt8] {
        let digits = text.filter { !$0.isWhitespace }
        return stride(from: 0, to: digits.count, by: 2).map {
            let start = digits.index(digits.startIndex, offsetBy: $0)
            return UInt8(digits[start..<digits.index(start, offsetBy: 2)], radix: 16)!
        }
    }

    /// RTM_NEWLINK for `up2` (index 3) with UP, LOWER_UP and RUNNING: the ifinfomsg and the first
    /// attribute (IFLA_IFNAME) of the kernel's 1,492-byte message, its length field cut to match.
    static let linkRunning = """
        28000000 1000 0000 00000000 00000000
        0000 0100 03000000 43100100 00000000
        0800 0300 75703200
        """

    /// RTM_NEWADDR 10.50.0.1/24 on index 3, as sent (76 bytes: IFA_ADDRESS, IFA_LOCAL, IFA_LABEL,
    /// IFA_FLAGS, IFA_CACHEINFO).
    static let addressAdded = """
        4c000000 1400 0000 cfa20d6b 17040000
        02 18 80 00 03000000
        0800 0100 0a320001  0800 0200 0a320001  0800 0300 75703200  0800 0800 80000000
        1400 0600 ffffffff ffffffff faf40100 faf40100
        """

    /// RTM_NEWROUTE default via 10.50.0.2 dev index 3, table main.
    static let defaultRouteAdded = """
        34000000 1800 0006 d0a20d6b 36040000
        02 00 00 00 fe 03 00 01 00000000
        0800 0f00 fe000000  0800 0500 0a320002  0800 0400 03000000
        """

    /// RTM_NEWADDR fd50::1/64 on index 3.
    static let address6Added = """
        48000000 1400 0000 00000000 00000000
        0a 40 82 00 03000000
        1400 0100 fd500000 00000000 00000000 00000001
        1400 0600 ffffffff ffffffff e4f50100 e4f50100
        0800 0800 82000000
        """

    func testLink() {
        XCTAssertEqual(NetworkEvent.parse(datagram: bytes(Self.linkRunning)),
                       [.link(index: 3, name: "up2", up: true, running: true, removed: false)])
        var down = bytes(Self.linkRunning)
        down[4] = 0x11  // RTM_DELLINK
        down[24] = 0x02  // flags without UP and RUNNING
        down[26] = 0x00
        XCTAssertEqual(NetworkEvent.parse(datagram: down), [.link(index: 3, name: "up2", up: false, running: false, removed: true)])
    }

    func testAddresses() {
        XCTAssertEqual(NetworkEvent.parse(datagram: bytes(Self.addressAdded)),
                       [.address(index: 3, address: IPPrefix("10.50.0.1/24")!, removed: false)])
        var removed = bytes(Self.addressAdded)
        removed[4] = 0x15  // RTM_DELADDR
        XCTAssertEqual(NetworkEvent.parse(datagram: removed), [.address(index: 3, address: IPPrefix("10.50.0.1/24")!, removed: true)])
        XCTAssertEqual(NetworkEvent.parse(datagram: bytes(Self.address6Added)),
                       [.address(index: 3, address: IPPrefix("fd50::1/64")!, removed: false)])
    }

    func testRoute() {
        let events = NetworkEvent.parse(datagram: bytes(Self.defaultRouteAdded))
        XCTAssertEqual(events, [.route(table: 254, destination: IPPrefix("0.0.0.0/0")!, interface: 3,
                                       gateway: IPAddress("10.50.0.2")!, removed: false)])
        XCTAssertEqual(events.first?.interfaceIndex, 3)
        XCTAssertEqual(events.first?.description, "route 0.0.0.0/0 via 10.50.0.2 dev 3 table 254 added")
    }

    /// Several messages in one datagram, as the kernel batches them, come out in order.
    func testSeveralInOneDatagram() {
        let datagram = bytes(Self.addressAdded) + bytes(Self.defaultRouteAdded) + bytes(Self.linkRunning)
        XCTAssertEqual(NetworkEvent.parse(datagram: datagram).count, 3)
    }

    /// Short and impossible messages are skipped, never read past their end.
    func testTruncatedAndForeignMessages() {
        let whole = bytes(Self.defaultRouteAdded)
        for count in 0..<whole.count {
            var cut = Array(whole.prefix(count))
            if count >= 4 { cut[0] = UInt8(count) }  // a length field that matches the cut
            let events = NetworkEvent.parse(datagram: cut)
            XCTAssertTrue(events.isEmpty || count >= 28, "\(count) bytes gave \(events)")
        }
        // A route of a family other than IPv4 and IPv6.
        var mixed = bytes(Self.defaultRouteAdded)
        mixed[16] = 7  // rtm_family AF_BRIDGE
        XCTAssertEqual(NetworkEvent.parse(datagram: mixed), [])
        // NLMSG_DONE and other types are not events.
        XCTAssertEqual(NetworkEvent.parse(datagram: bytes("14000000 0300 0200 00000000 00000000 00000000")), [])
    }
}
