import SluiceWire
import XCTest

@testable import SluiceRelay

/// The destination policy's verdicts, table-driven (docs/configuration.md, "Destination policy").
final class DestinationPolicyTests: XCTestCase {
    func verdicts(_ policy: DestinationPolicy, file: StaticString = #filePath, line: UInt = #line,
                  _ table: [(String, Bool)]) {
        for (text, allowed) in table {
            let address = IPAddress(text)!
            XCTAssertEqual(policy.refusal(of: address) == nil, allowed,
                           "\(text): \(policy.rule(for: address).map { "\($0)" } ?? "no rule")", file: file, line: line)
            XCTAssertEqual(policy.allows(address), allowed, "\(text): allows", file: file, line: line)
        }
    }

    func testBuiltInRulesRefuseTheRelayHostAndItsLink() {
        verdicts(DestinationPolicy(), [
            ("127.0.0.1", false), ("127.255.255.254", false), ("0.0.0.0", false), ("0.1.2.3", false),
            ("169.254.169.254", false), ("169.254.0.1", false), ("224.0.0.1", false), ("239.255.255.250", false),
            ("255.255.255.255", false),
            ("::", false), ("::1", false), ("fe80::1", false), ("febf::1", false), ("ff02::1", false),
            ("ff05::1:3", false), ("fd00:ec2::254", false),
            // IPv4-mapped: judged as IPv4, so no way around the IPv4 rules through an IPv6 socket.
            ("::ffff:127.0.0.1", false), ("::ffff:169.254.169.254", false), ("::ffff:0.0.0.0", false),
            ("::ffff:10.20.0.2", true),
            // The networks a relay serves stay open.
            ("10.20.0.2", true), ("192.168.1.1", true), ("8.8.8.8", true), ("100.64.0.1", true),
            ("126.255.255.255", true), ("128.0.0.1", true), ("169.253.255.255", true), ("223.255.255.255", true),
            ("255.255.255.254", true), ("::2", true), ("fec0::1", true), ("2001:db8::1", true),
            ("fd00:ec2::253", true), ("fd20::2", true),
        ])
    }

    func testTheMostSpecificPrefixWins() {
        let policy = DestinationPolicy(
            allow: [IPPrefix("127.0.0.1/32")!, IPPrefix("10.1.0.0/16")!, IPPrefix("169.254.0.0/16")!],
            deny: [IPPrefix("10.0.0.0/8")!, IPPrefix("10.1.2.0/24")!, IPPrefix("fd00::/8")!])
        verdicts(policy, [
            ("127.0.0.1", true), ("127.0.0.2", false),  // one loopback address opened, the rest still refused
            ("169.254.169.254", true),  // a configured rule for a built-in prefix replaces it
            ("10.0.0.1", false), ("10.1.0.1", true), ("10.1.2.3", false), ("10.2.0.1", false),
            ("fd00:ec2::254", false), ("fd20::2", false), ("fe80::1", false), ("11.0.0.1", true),
        ])
        XCTAssertEqual(policy.rule(for: IPAddress("10.1.2.3")!)?.description, "--deny-destination 10.1.2.0/24")
        XCTAssertEqual(policy.rule(for: IPAddress("127.0.0.2")!)?.description, "built-in rule 127.0.0.0/8 (loopback)")
        XCTAssertNil(policy.rule(for: IPAddress("11.0.0.1")!))
    }

    func testDenyEverythingAllowSome() {
        let policy = DestinationPolicy(allow: [IPPrefix("10.20.0.0/24")!], deny: [IPPrefix("0.0.0.0/0")!, IPPrefix("::/0")!])
        verdicts(policy, [("10.20.0.2", true), ("10.20.1.2", false), ("8.8.8.8", false), ("2001:db8::1", false),
                          ("::ffff:10.20.0.9", true), ("127.0.0.1", false)])
    }

    func testMappedConfigPrefixesBecomeIPv4() {
        XCTAssertEqual(DestinationPolicy.normalized(IPPrefix("::ffff:10.0.0.0/104")!), IPPrefix("10.0.0.0/8")!)
        XCTAssertEqual(DestinationPolicy.normalized(IPPrefix("::ffff:0:0/96")!), IPPrefix("0.0.0.0/0")!)
        XCTAssertEqual(DestinationPolicy.normalized(IPPrefix("fd20::/64")!), IPPrefix("fd20::/64")!)
        let policy = DestinationPolicy(deny: [IPPrefix("::ffff:10.0.0.0/104")!])
        verdicts(policy, [("10.1.1.1", false), ("::ffff:10.1.1.1", false), ("11.0.0.1", true)])
    }

    func testConfiguredPrefixesLoseTheirHostBits() {
        let cases = [("10.1.2.3/8", "10.0.0.0/8"), ("10.1.2.3/32", "10.1.2.3/32"), ("10.1.2.3/0", "0.0.0.0/0"),
                     ("fd20::ff12:2:3:4/72", "fd20::ff00:0:0:0/72"), ("fd20:1:2:3:4::/63", "fd20:1:2:2::/63"),
                     ("fd20::1/128", "fd20::1/128"), ("fd20::1/0", "::/0")]
        for (given, expected) in cases {
            XCTAssertEqual(DestinationPolicy.normalized(IPPrefix(given)!), IPPrefix(expected)!, given)
        }
        verdicts(DestinationPolicy(deny: [IPPrefix("fd20:1:2:3:4::/63")!]),
                 [("fd20:1:2:2::1", false), ("fd20:1:2:3:ffff::", false), ("fd20:1:2:4::", true), ("fd20:1:2:1::", true)])
    }

    func testRulesAreOrderedMostSpecificFirst() {
        let lengths = DestinationPolicy(allow: [IPPrefix("0.0.0.0/1")!]).rules.map(\.prefix.length)
        XCTAssertEqual(lengths, lengths.sorted(by: >))
        XCTAssertEqual(DestinationPolicy().rules.count, DestinationPolicy.builtIn.count)
    }
}
