import CSluiceHostShims
import Glibc
import SluiceWire
import XCTest

@testable import SluiceHost

/// Byte-level checks of the rtnetlink codec. Needs no privileges (nothing is sent).
final class NetlinkMessageTests: XCTestCase {
    private func le32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }
    private func le16(_ v: UInt16) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }

    func testInvertedFwmarkRuleEncoding() throws {
        let netlink = try NetlinkSocket()
        var message = netlink.ruleMessage(
            PolicyRule(family: .ipv4, priority: 21324, table: 21324, fwmark: 0x534c, invert: true),
            type: RTM_NEWRULE, flags: NLM_F_CREATE | NLM_F_EXCL)
        message.sequence = 9
        let expected: [UInt8] =
            le32(60) + le16(32 /* RTM_NEWRULE */) + le16(0x600 /* CREATE|EXCL */) + le32(9) + le32(0)
            // fib_rule_hdr: AF_INET, dst_len, src_len, tos, table (0: see FRA_TABLE), res1, res2,
            // action FR_ACT_TO_TBL, flags FIB_RULE_INVERT
            + [2, 0, 0, 0, 0, 0, 0, 1] + le32(2)
            + le16(8) + le16(6 /* FRA_PRIORITY */) + le32(21324)
            + le16(8) + le16(15 /* FRA_TABLE */) + le32(21324)
            + le16(8) + le16(10 /* FRA_FWMARK */) + le32(0x534c)
            + le16(8) + le16(16 /* FRA_FWMASK */) + le32(0xffff_ffff)
        XCTAssertEqual(message.encoded(), expected)
    }

    func testIPv6AddressEncodingHasNoDAD() throws {
        let netlink = try NetlinkSocket()
        let message = try netlink.addressMessage(InterfaceAddress(IPPrefix("fd20::1/64")!, on: "lo"), type: RTM_NEWADDR, flags: 0)
        let header = try XCTUnwrap(message.familyHeader(ifaddrmsg.self))
        XCTAssertEqual(header.ifa_family, UInt8(AF_INET6))
        XCTAssertEqual(header.ifa_prefixlen, 64)
        XCTAssertEqual(UInt32(header.ifa_flags), UInt32(IFA_F_NODAD))
        let attributes = message.attributes(after: ifaddrmsg.self)
        XCTAssertEqual(attributes.uint32(IFA_FLAGS), UInt32(IFA_F_NODAD))
        XCTAssertEqual(attributes[IFA_LOCAL], IPAddress("fd20::1")!.bytes)
    }

    func testRouteEncodingUsesTableAttribute() throws {
        let netlink = try NetlinkSocket()
        let message = try netlink.routeMessage(Route(IPPrefix("10.20.0.7/24")!, dev: "lo", table: 21324, metric: 5), type: RTM_NEWROUTE, flags: 0)
        let header = try XCTUnwrap(message.familyHeader(rtmsg.self))
        XCTAssertEqual(header.rtm_dst_len, 24)
        XCTAssertEqual(header.rtm_table, 0, "tables above 255 go only in RTA_TABLE")
        XCTAssertEqual(header.rtm_scope, UInt8(RT_SCOPE_LINK.rawValue))
        let attributes = message.attributes(after: rtmsg.self)
        XCTAssertEqual(attributes[RTA_DST.rawValue], [10, 20, 0, 0], "host bits cleared")
        XCTAssertEqual(attributes.uint32(RTA_TABLE.rawValue), 21324)
        XCTAssertEqual(attributes.uint32(RTA_PRIORITY.rawValue), 5)
        XCTAssertEqual(attributes.uint32(RTA_OIF.rawValue), if_nametoindex("lo"))
    }

    func testDecodeSplitsMessagesAndRejectsImpossibleLengths() {
        let done = le32(20) + le16(UInt16(NLMSG_DONE)) + le16(2) + le32(1) + le32(0) + le32(0)
        let error = le32(36) + le16(UInt16(NLMSG_ERROR)) + le16(0) + le32(2) + le32(0) + le32(UInt32(bitPattern: -EEXIST)) + [UInt8](repeating: 0, count: 16)
        let messages = NetlinkMessage.decode(datagram: done + error)
        XCTAssertEqual(messages?.map(\.type), [UInt16(NLMSG_DONE), UInt16(NLMSG_ERROR)])
        XCTAssertEqual(messages?.map(\.sequence), [1, 2])
        XCTAssertEqual(messages?.last?.familyHeader(Int32.self), -EEXIST)

        XCTAssertNil(NetlinkMessage.decode(datagram: le32(200) + Array(done.dropFirst(4))), "length beyond the datagram")
        XCTAssertNil(NetlinkMessage.decode(datagram: le32(8) + Array(done.dropFirst(4))), "length shorter than the header")
        XCTAssertEqual(NetlinkMessage.decode(datagram: Array(done.prefix(10)))?.count, 0, "a truncated header holds no message")
    }

    func testAttributeParsingStopsAtBadLength() {
        let good = le16(8) + le16(1) + le32(42)
        let bad = le16(40) + le16(2) + le32(7)
        let attributes = NetlinkAttributes(good + bad, from: 0)
        XCTAssertEqual(attributes.uint32(1), 42)
        XCTAssertNil(attributes[2])
    }

    func testPrefixNetwork() {
        XCTAssertEqual(IPPrefix("10.20.0.7/24")!.network, IPPrefix("10.20.0.0/24"))
        XCTAssertEqual(IPPrefix("10.20.255.7/13")!.network, IPPrefix("10.16.0.0/13"))
        XCTAssertEqual(IPPrefix("1.2.3.4/0")!.network, IPPrefix("0.0.0.0/0"))
        XCTAssertEqual(IPPrefix("fd20::1:2/64")!.network, IPPrefix("fd20::/64"))
        XCTAssertEqual(IPPrefix("fd20::1/128")!.network, IPPrefix("fd20::1/128"))
    }
}
