import SluiceMux
import XCTest

@testable import SluiceProxy

/// The HTTP side of the front-end without sockets: request heads, targets, the origin-form rewrite,
/// and Basic credentials.
final class HTTPProxyTests: XCTestCase {
    private func parse(_ text: String) throws -> (head: HTTPRequestHead, length: Int)? {
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBytes { try HTTPRequestHead.parse($0) }
    }

    func testAbsoluteFormAndConnectHeads() throws {
        let text = "GET http://files.test:8080/a/b?c=1 HTTP/1.1\r\nHost: files.test:8080\r\nUser-Agent: curl/7.88\r\n"
            + "Proxy-Connection: Keep-Alive\r\n\r\nBODY"
        let (head, length) = try XCTUnwrap(parse(text))
        XCTAssertEqual(head.method, "GET")
        XCTAssertEqual(head.target, "http://files.test:8080/a/b?c=1")
        XCTAssertEqual(head.version, "HTTP/1.1")
        XCTAssertEqual(head.value(of: "user-agent"), "curl/7.88")
        XCTAssertEqual(length, text.utf8.count - 4, "the body is not part of the head")

        let connect = try XCTUnwrap(parse("CONNECT [fd20::2]:443 HTTP/1.1\r\nHost: [fd20::2]:443\r\n\r\n")).head
        XCTAssertEqual(connect.method, "CONNECT")
        XCTAssertEqual(ProxyTarget.destination(authority: Substring(connect.target), defaultPort: nil),
                       Destination(host: .ip(.v6(0xfd20_0000_0000_0000, 2)), port: 443))
    }

    func testIncompleteHeadsWaitAndBadOnesAreRefused() throws {
        let full = "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n"
        for cut in 0..<full.utf8.count {
            XCTAssertNil(try parse(String(full.utf8.prefix(cut))!), "a head of \(cut) bytes parsed")
        }
        let cases: [(String, HTTPRequestHead.Problem)] = [
            ("GET  http://a/ HTTP/1.1\r\n\r\n", .badRequestLine),
            ("GET http://a/\r\n\r\n", .badRequestLine),
            ("GET http://a/ HTTP/2.0\r\n\r\n", .badVersion),
            ("GET http://a/ HTTP/1.1\r\nHost : a\r\n\r\n", .badField),
            ("GET http://a/ HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", .badField),
            ("GET http://a/ HTTP/1.1\r\nX: " + String(repeating: "x", count: HTTPRequestHead.maximumLength) + "\r\n\r\n", .tooLong),
        ]
        for (text, problem) in cases {
            XCTAssertThrowsError(try parse(text), text.prefix(40).description) { XCTAssertEqual($0 as? HTTPRequestHead.Problem, problem) }
        }
        XCTAssertThrowsError(try parse(String(repeating: "x", count: HTTPRequestHead.maximumLength + 1))) {
            XCTAssertEqual($0 as? HTTPRequestHead.Problem, .tooLong, "no end in sight is refused too")
        }
        XCTAssertEqual(HTTPRequestHead.Problem.badVersion.status, 505)
    }

    func testTargets() {
        let cases: [(String, UInt16?, Destination?)] = [
            ("10.20.0.2:8080", nil, Destination(host: .ip(.v4(0x0A14_0002)), port: 8080)),
            ("files.test", 80, Destination(host: .domain("files.test"), port: 80)),
            ("files.test:81", 80, Destination(host: .domain("files.test"), port: 81)),
            ("[fd20::2]", 80, Destination(host: .ip(.v6(0xfd20_0000_0000_0000, 2)), port: 80)),
            ("files.test", nil, nil),  // CONNECT needs a port
            ("files.test:0", 80, nil),
            ("files.test:99999", 80, nil),
            ("bad name:80", 80, nil),
            ("[10.0.0.1]:80", 80, nil),
            ("", 80, nil),
        ]
        for (authority, port, expected) in cases {
            XCTAssertEqual(ProxyTarget.destination(authority: Substring(authority), defaultPort: port), expected, authority)
        }
    }

    func testOriginFormDropsProxyFieldsAndAsksForClose() throws {
        let head = try XCTUnwrap(parse("POST http://files.test/up?x=1 HTTP/1.1\r\nHost: files.test\r\nProxy-Authorization: Basic eDp5\r\n"
            + "Proxy-Connection: keep-alive\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nContent-Length: 4\r\n\r\n")).head
        let rewritten = ProxyConnection.originForm(head, path: "/up?x=1", authority: "files.test")
        XCTAssertEqual(rewritten, "POST /up?x=1 HTTP/1.1\r\nHost: files.test\r\nContent-Length: 4\r\nConnection: close\r\n\r\n")
        let noHost = try XCTUnwrap(parse("GET http://10.20.0.2:8080/ HTTP/1.0\r\n\r\n")).head
        XCTAssertEqual(ProxyConnection.originForm(noHost, path: "/", authority: "10.20.0.2:8080"),
                       "GET / HTTP/1.0\r\nHost: 10.20.0.2:8080\r\nConnection: close\r\n\r\n")
    }

    func testBasicCredentials() {
        let users = ProxyUsers([(Array("alice".utf8), Array("pa:ss".utf8))])
        XCTAssertTrue(users.accepts(proxyAuthorization: "Basic YWxpY2U6cGE6c3M="))  // alice:pa:ss
        XCTAssertTrue(users.accepts(proxyAuthorization: "basic  YWxpY2U6cGE6c3M= "))
        XCTAssertFalse(users.accepts(proxyAuthorization: "Basic YWxpY2U6cGE6c3Q="), "alice:pa:st")
        XCTAssertFalse(users.accepts(proxyAuthorization: "Bearer YWxpY2U6cGE6c3M="))
        XCTAssertFalse(users.accepts(proxyAuthorization: "Basic !!!"))
        XCTAssertFalse(users.accepts(proxyAuthorization: nil))
        XCTAssertFalse(users.accepts(user: Array("alice".utf8), password: Array("pa:s".utf8)))
        XCTAssertFalse(users.accepts(user: Array("bob".utf8), password: Array("pa:ss".utf8)))
    }
}
