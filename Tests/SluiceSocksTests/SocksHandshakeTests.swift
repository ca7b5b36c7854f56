import SluiceSocks
import SluiceTestSupport
import SluiceWire
import XCTest

/// The client and server state machines against fixed byte exchanges, and against each other.
final class SocksHandshakeTests: XCTestCase {
    private let request = SocksRequest(command: .connect, address: SocksAddress(host: .ip(IPAddress("10.20.0.2")!), port: 8080))
    private let alice = SocksCredentials(username: Array("alice".utf8), password: Array("s3cret".utf8))!

    func testClientWithoutAuthentication() throws {
        var client = SocksClientHandshake(request: request, credentials: nil)
        XCTAssertEqual(client.start(), hex("05 01 00"))
        XCTAssertEqual(try feed(&client, "05"), .init(consumed: 0, step: .wait), "half a method selection")
        XCTAssertEqual(try feed(&client, "05 00"), .init(consumed: 2, step: .send(hex("05 01 00 01 0a140002 1f90"))))
        // The reply and the first bytes of data in one read: the data stays unconsumed.
        let result = try feed(&client, "05 00 00 01 0a140001 c350 68656c6c6f")
        XCTAssertEqual(result, .init(consumed: 10, step: .done(SocksReply(code: .succeeded, bound: SocksAddress(host: .ip(IPAddress("10.20.0.1")!), port: 50000)))))
    }

    func testClientWithPassword() throws {
        var client = SocksClientHandshake(request: request, credentials: alice)
        XCTAssertEqual(client.start(), hex("05 02 00 02"))
        XCTAssertEqual(try feed(&client, "05 02"), .init(consumed: 2, step: .send(hex("01 05 616c696365 06 733363726574"))))
        XCTAssertEqual(try feed(&client, "01 00"), .init(consumed: 2, step: .send(hex("05 01 00 01 0a140002 1f90"))))
        XCTAssertEqual(try feed(&client, "05 05 00 01 00000000 0000"), .init(consumed: 10, step: .done(SocksReply(code: .connectionRefused))))
    }

    func testClientFailures() throws {
        var noAuth = SocksClientHandshake(request: request, credentials: nil)
        _ = noAuth.start()
        XCTAssertThrowsError(try feed(&noAuth, "05 ff")) {
            XCTAssertEqual($0 as? SocksClientHandshake.Failure, .noAcceptableMethod(offered: [0]))
            XCTAssertTrue("\($0)".contains("requires authentication"), "\($0)")
        }
        var unoffered = SocksClientHandshake(request: request, credentials: nil)
        _ = unoffered.start()
        XCTAssertThrowsError(try feed(&unoffered, "05 02")) {
            XCTAssertEqual($0 as? SocksClientHandshake.Failure, .protocolError(.unofferedMethod(2)))
        }
        var wrong = SocksClientHandshake(request: request, credentials: alice)
        _ = wrong.start()
        _ = try feed(&wrong, "05 02")
        XCTAssertThrowsError(try feed(&wrong, "01 01")) {
            XCTAssertEqual($0 as? SocksClientHandshake.Failure, .authenticationFailed(status: 1))
        }
        var http = SocksClientHandshake(request: request, credentials: nil)
        _ = http.start()
        XCTAssertThrowsError(try feed(&http, "48 54")) {  // "HT": an HTTP server answered
            XCTAssertEqual($0 as? SocksClientHandshake.Failure, .protocolError(.badVersion(0x48, expected: 5)))
        }
    }

    func testServerRequiresWhatItIsConfiguredFor() throws {
        var open = SocksServerHandshake(authenticate: nil)
        XCTAssertEqual(try feed(&open, "05 01 00"), .init(consumed: 3, step: .send(hex("05 00"))))
        XCTAssertEqual(try feed(&open, "05 01 00 01 0a14"), .init(consumed: 0, step: .wait))
        XCTAssertEqual(try feed(&open, "05 01 00 01 0a140002 1f90"), .init(consumed: 10, step: .request(request)))

        var guarded = SocksServerHandshake { $0 == Array("alice".utf8) && $1 == Array("s3cret".utf8) }
        guard case .sendAndClose(let refusal, _) = try feed(&guarded, "05 01 00").step else { return XCTFail("no-auth accepted") }
        XCTAssertEqual(refusal, hex("05 ff"))

        var checked = SocksServerHandshake { $0 == Array("alice".utf8) && $1 == Array("s3cret".utf8) }
        XCTAssertEqual(try feed(&checked, "05 02 00 02").step, .send(hex("05 02")))
        guard case .sendAndClose(let denied, let why) = try feed(&checked, "01 05 616c696365 05 7772306e67").step else {
            return XCTFail("a wrong password passed")
        }
        XCTAssertEqual(denied, hex("01 01"))
        XCTAssertFalse(why.contains("wr0ng"), "the password never appears in a message")

        var good = SocksServerHandshake { $0 == Array("alice".utf8) && $1 == Array("s3cret".utf8) }
        _ = try feed(&good, "05 02 00 02")
        XCTAssertEqual(try feed(&good, "01 05 616c696365 06 733363726574").step, .send(hex("01 00")))
        XCTAssertEqual(good.username, Array("alice".utf8))
    }

    func testClientAndServerAgree() throws {
        for credentials in [nil, alice] {
            var client = SocksClientHandshake(request: request, credentials: credentials)
            var server = SocksServerHandshake(authenticate: credentials.map { c in { $0 == c.username && $1 == c.password } })
            var toServer = client.start()
            var got: SocksRequest?
            var rounds = 0
            while got == nil, rounds < 5 {
                rounds += 1
                let (consumed, step) = try toServer.withUnsafeBytes { try server.receive($0) }
                XCTAssertEqual(consumed, toServer.count)
                switch step {
                case .send(let answer):
                    let (taken, next) = try answer.withUnsafeBytes { try client.receive($0) }
                    XCTAssertEqual(taken, answer.count)
                    guard case .send(let more) = next else { return XCTFail("client stopped at \(next)") }
                    toServer = more
                case .request(let r): got = r
                default: return XCTFail("server stopped at \(step)")
                }
            }
            XCTAssertEqual(got, request)
            let reply = try SocksReply(code: .succeeded, bound: SocksAddress(host: .ip(IPAddress("10.20.0.1")!), port: 4)).encoded()
            XCTAssertEqual(try reply.withUnsafeBytes { try client.receive($0) }.step,
                           .done(SocksReply(code: .succeeded, bound: SocksAddress(host: .ip(IPAddress("10.20.0.1")!), port: 4))))
        }
    }

    struct Result<Step: Equatable>: Equatable {
        let consumed: Int
        let step: Step
    }

    private func feed(_ client: inout SocksClientHandshake, _ text: String) throws -> Result<SocksClientHandshake.Step> {
        let r = try hex(text).withUnsafeBytes { try client.receive($0) }
        return Result(consumed: r.consumed, step: r.step)
    }

    private func feed(_ server: inout SocksServerHandshake, _ text: String) throws -> Result<SocksServerHandshake.Step> {
        let r = try hex(text).withUnsafeBytes { try server.receive($0) }
        return Result(consumed: r.consumed, step: r.step)
    }
}
