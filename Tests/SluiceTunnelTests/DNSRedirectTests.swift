import SluiceWire
import XCTest

@testable import SluiceTunnel

/// The split-DNS decision: which queries go to the tunnel's resolvers and which go on as sent.
final class DNSRedirectTests: XCTestCase {
    private let tunnelResolvers = [SocketEndpoint(address: IPAddress("10.20.0.2")!, port: 53), SocketEndpoint(address: IPAddress("fd20::2")!, port: 53)]
    private let lanResolver = SocketEndpoint(address: IPAddress("192.168.1.1")!, port: 53)
    private func app(_ port: UInt16) -> SocketEndpoint { SocketEndpoint(address: IPAddress("198.18.0.1")!, port: port) }

    private func decide(_ redirect: DNSRedirect, _ name: String, to destination: SocketEndpoint, from port: UInt16 = 40000)
        -> DNSRedirect.Decision
    {
        let query = DNSQuestion(name: DNSName(name)!, type: 1).queryMessage(id: 1)
        return query.withUnsafeBytes { redirect.route(datagram: $0, to: destination, from: app(port)) }
    }

    func testWithoutDNSNothingMoves() {
        let redirect = DNSRedirect(resolvers: [], domains: [DNSName("corp.test")!])
        XCTAssertFalse(redirect.splits)
        XCTAssertEqual(decide(redirect, "a.corp.test", to: lanResolver), .asSent)
        XCTAssertEqual(redirect.route(flowTo: lanResolver, from: app(1)), .asSent)
    }

    func testWithoutDomainsEveryQueryGoesToTheTunnel() {
        let redirect = DNSRedirect(resolvers: tunnelResolvers, domains: [])
        XCTAssertEqual(decide(redirect, "www.example.org", to: lanResolver, from: 40000),
                       .resolver(tunnelResolvers[0]), "spread by the application's port")
        XCTAssertEqual(decide(redirect, "www.example.org", to: lanResolver, from: 40001),
                       .resolver(tunnelResolvers[1]))
        XCTAssertEqual(redirect.route(flowTo: lanResolver, from: app(40000)), .resolver(tunnelResolvers[0]))
        let notDNS = SocketEndpoint(address: IPAddress("192.168.1.1")!, port: 5353)
        XCTAssertEqual(decide(redirect, "x.local", to: notDNS), .asSent)
        XCTAssertEqual(redirect.route(flowTo: notDNS, from: app(1)), .asSent)
    }

    func testSplitByName() {
        let redirect = DNSRedirect(resolvers: tunnelResolvers, domains: [DNSName("corp.test")!, DNSName("lab.example")!])
        XCTAssertTrue(redirect.splits)
        let tunnel = DNSRedirect.Decision.resolver(tunnelResolvers[0])
        XCTAssertEqual(decide(redirect, "corp.test", to: lanResolver), tunnel)
        XCTAssertEqual(decide(redirect, "Host.CORP.test", to: lanResolver), tunnel)
        XCTAssertEqual(decide(redirect, "a.b.lab.example", to: lanResolver), tunnel)
        XCTAssertEqual(decide(redirect, "www.example.org", to: lanResolver), .asSent)
        XCTAssertEqual(decide(redirect, "notcorp.test", to: lanResolver), .asSent)
        // Sent to a tunnel resolver already: left alone, whatever the name.
        let direct = tunnelResolvers[1]
        XCTAssertEqual(decide(redirect, "www.example.org", to: direct), .asSent)
        XCTAssertEqual(decide(redirect, "a.corp.test", to: direct), .asSent)
    }

    func testSplitLeavesWhatItCannotReadAndTCPAsSent() {
        let redirect = DNSRedirect(resolvers: tunnelResolvers, domains: [DNSName("corp.test")!])
        for garbage: [UInt8] in [[], [1, 2, 3], Array(repeating: 0xff, count: 40)] {
            let decision = garbage.withUnsafeBytes { redirect.route(datagram: $0, to: lanResolver, from: app(1)) }
            XCTAssertEqual(decision, .asSent, "\(garbage)")
        }
        XCTAssertEqual(redirect.route(flowTo: lanResolver, from: app(1)), .asSent, "a TCP query's name is unknown at its SYN")
    }
}
