import CSluiceHostShims
import Glibc
import SluiceWire
import XCTest

@testable import SluiceHost

/// TUN device creation, naming, errors and packet I/O, inside the test namespace.
final class TunDeviceTests: NamespacedTestCase {
    func testNamespaceIsFreshAndPrivate() throws {
        XCTAssertNotEqual(TestNamespace.inode("/proc/self/ns/net"), TestNamespace.original)
        XCTAssertTrue(Thread.isMainThread, "tests run on the main thread, which moved into the namespace")
        // A fresh namespace holds only lo, plus TUNs a test has open at this moment.
        let tun = try TunDevice(name: "slns0")
        XCTAssertEqual(Set(try IPTool.linkNames()), ["lo", tun.name], "ip (spawned from this thread) sees the test namespace")
    }

    func testOpenGivesNamedNonBlockingCloseOnExecDevice() throws {
        var tun: TunDevice? = try TunDevice(name: "sltun0")
        XCTAssertEqual(tun?.name, "sltun0")
        XCTAssertTrue(try IPTool.linkNames().contains("sltun0"))
        let fd = try XCTUnwrap(tun?.fd)
        XCTAssertNotEqual(fcntl(fd, F_GETFL) & O_NONBLOCK, 0)
        XCTAssertNotEqual(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0)

        var buffer = [UInt8](repeating: 0, count: 2048)
        let result = try buffer.withUnsafeMutableBytes { try tun!.read(into: $0) }
        XCTAssertEqual(result, .wouldBlock, "nothing queued on a fresh device")

        tun = nil
        XCTAssertFalse(try IPTool.linkNames().contains("sltun0"), "closing the last fd deletes a non-persistent TUN")
        XCTAssertEqual(fcntl(fd, F_GETFD), -1, "the descriptor is closed")
    }

    func testKernelChoosesNameForPatternOrNil() throws {
        let patterned = try TunDevice(name: "slpat%d")
        XCTAssertEqual(patterned.name, "slpat0")
        let unnamed = try TunDevice()
        XCTAssertTrue(unnamed.name.hasPrefix("tun"), unnamed.name)
    }

    func testSecondOpenOfSameNameIsBusy() throws {
        let first = try TunDevice(name: "slbusy0", options: .init(exclusive: true))
        XCTAssertThrowsError(try TunDevice(name: "slbusy0")) { error in
            XCTAssertEqual(error as? HostError, .tunAttach(device: "slbusy0", errno: EBUSY))
            XCTAssertEqual(
                "\(error)",
                "create TUN device slbusy0 (TUNSETIFF): Device or resource busy (EBUSY) — device slbusy0 is in use by another process")
        }
        XCTAssertEqual(first.name, "slbusy0")
    }

    func testExclusiveRefusesLeftoverPersistentDevice() throws {
        let netlink = try NetlinkSocket()
        addTeardownBlock { try? netlink.deleteLink(named: "slpers0") }
        do {
            let tun = try TunDevice(name: "slpers0")
            try tun.setPersistent(true)
        }
        XCTAssertTrue(try IPTool.linkNames().contains("slpers0"), "a persistent TUN outlives its fd")

        XCTAssertThrowsError(try TunDevice(name: "slpers0", options: .init(exclusive: true))) { error in
            XCTAssertEqual(error as? HostError, .tunExists(device: "slpers0"))
            XCTAssertEqual(
                "\(error)",
                "create TUN device slpers0 (TUNSETIFF, exclusive): Device or resource busy (EBUSY) — device slpers0 exists already; if it was left behind, remove it with `ip link delete slpers0`")
        }
        let reattached = try TunDevice(name: "slpers0")
        XCTAssertEqual(reattached.name, "slpers0")

        try netlink.deleteLink(named: "slpers0")
        XCTAssertFalse(try IPTool.linkNames().contains("slpers0"))
    }

    func testBadNamesAreRejectedBeforeTheKernel() throws {
        let cases: [(String, String)] = [
            ("", "invalid interface name \"\": the name is empty"),
            ("sluice-too-long0", "invalid interface name \"sluice-too-long0\": 16 bytes is longer than the kernel's limit of 15"),
            ("a/b", "invalid interface name \"a/b\": it contains \"/\", which the kernel does not allow"),
            ("a:b", "invalid interface name \"a:b\": it contains \":\", which the kernel does not allow"),
            ("a b", "invalid interface name \"a b\": it contains whitespace or a control character, which the kernel does not allow"),
            ("..", "invalid interface name \"..\": \".\" and \"..\" are reserved"),
        ]
        for (name, text) in cases {
            XCTAssertThrowsError(try TunDevice(name: name), name) { error in
                guard case .invalidInterfaceName(let reported, _) = error as? HostError else {
                    return XCTFail("\(name): unexpected \(error)")
                }
                XCTAssertEqual(reported, name)
                XCTAssertEqual("\(error)", text)
            }
        }
        XCTAssertNoThrow(try TunDevice(name: "sl345678901234"), "15 bytes is the limit, 14 is fine")
        XCTAssertNoThrow(try TunDevice(name: "sl3456789012345"), "15 bytes is fine")
    }

    func testVnetHeaderDeviceAcceptsOffloads() throws {
        let tun = try TunDevice(name: "slvnet0", options: .init(vnetHeader: true))
        XCTAssertTrue(tun.options.vnetHeader)
        XCTAssertNoThrow(try tun.setOffloads(UInt32(TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6)))
        XCTAssertThrowsError(try tun.setOffloads(0x8000_0000)) { error in
            XCTAssertEqual((error as? HostError)?.errno, EINVAL)
            XCTAssertTrue("\(error)".hasPrefix("set offloads 0x80000000 (TUNSETOFFLOAD) on TUN device slvnet0: Invalid argument (EINVAL)"), "\(error)")
        }
    }

    /// Writes an ICMP echo request from a peer on the TUN's subnet to the TUN's own address and
    /// reads the kernel's echo reply back: both directions of the packet path, all inside the
    /// namespace.
    func testPacketRoundTripThroughKernel() throws {
        let tun = try TunDevice(name: "slecho0")
        let netlink = try NetlinkSocket()
        try netlink.setLink("slecho0", up: true)
        try netlink.add(InterfaceAddress(IPPrefix("10.99.0.1/24")!, on: "slecho0"))

        let request = ICMPEcho.request(from: [10, 99, 0, 2], to: [10, 99, 0, 1], identifier: 0x5157, sequence: 1, payload: Array("sluice".utf8))
        XCTAssertEqual(try request.withUnsafeBytes { try tun.write($0) }, .done(request.count))

        var buffer = [UInt8](repeating: 0, count: 2048)
        let deadline = Date().addingTimeInterval(3)
        while Date() < deadline {
            var pfd = pollfd(fd: tun.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 200) == 1 else { continue }
            guard case .done(let n) = try buffer.withUnsafeMutableBytes({ try tun.read(into: $0) }) else { continue }
            let packet = Array(buffer[..<n])
            guard packet.count >= 28, packet[0] >> 4 == 4, packet[9] == 1, packet[20] == 0 else { continue }  // IPv4 ICMP echo reply
            XCTAssertEqual(Array(packet[12..<16]), [10, 99, 0, 1])
            XCTAssertEqual(Array(packet[16..<20]), [10, 99, 0, 2])
            XCTAssertEqual(Array(packet[28...]), Array("sluice".utf8))
            return
        }
        XCTFail("no echo reply came out of the TUN")
    }

    func testErrorTextForNonexistentDevice() throws {
        let netlink = try NetlinkSocket()
        XCTAssertThrowsError(try netlink.link(named: "slnosuch0")) { error in
            XCTAssertEqual(error as? HostError, .noSuchInterface(name: "slnosuch0"))
            XCTAssertEqual("\(error)", "no network interface named slnosuch0 — check the name with `ip link`")
        }
        XCTAssertThrowsError(try netlink.setLink("slnosuch0", up: true)) { XCTAssertEqual($0 as? HostError, .noSuchInterface(name: "slnosuch0")) }
        XCTAssertThrowsError(try netlink.deleteLink(named: "slnosuch0")) { XCTAssertEqual($0 as? HostError, .noSuchInterface(name: "slnosuch0")) }
        XCTAssertThrowsError(try netlink.add(Route(IPPrefix("10.1.0.0/16")!, dev: "slnosuch0", table: 100))) {
            XCTAssertEqual($0 as? HostError, .noSuchInterface(name: "slnosuch0"))
        }
    }
}

/// Builds IPv4 ICMP echo requests for the round-trip test.
enum ICMPEcho {
    static func request(from source: [UInt8], to destination: [UInt8], identifier: UInt16, sequence: UInt16, payload: [UInt8]) -> [UInt8] {
        var icmp: [UInt8] = [8, 0, 0, 0, UInt8(identifier >> 8), UInt8(identifier & 0xFF), UInt8(sequence >> 8), UInt8(sequence & 0xFF)] + payload
        let icmpSum = checksum(icmp)
        icmp[2] = UInt8(icmpSum >> 8)
        icmp[3] = UInt8(icmpSum & 0xFF)
        let total = 20 + icmp.count
        var ip: [UInt8] = [0x45, 0, UInt8(total >> 8), UInt8(total & 0xFF), 0, 1, 0, 0, 64, 1, 0, 0] + source + destination
        let ipSum = checksum(ip)
        ip[10] = UInt8(ipSum >> 8)
        ip[11] = UInt8(ipSum & 0xFF)
        return ip + icmp
    }

    static func checksum(_ bytes: [UInt8]) -> UInt16 {
        var sum: UInt32 = 0
        var i = 0
        while i < bytes.count {
            sum += UInt32(bytes[i]) << 8 | (i + 1 < bytes.count ? UInt32(bytes[i + 1]) : 0)
            i += 2
        }
        while sum >> 16 != 0 { sum = (sum & 0xFFFF) + (sum >> 16) }
        return ~UInt16(sum)
    }
}
