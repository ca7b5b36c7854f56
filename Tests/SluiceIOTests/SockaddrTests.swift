import Glibc
import SluiceIO
import SluiceWire
import XCTest

/// `SocketEndpoint.withSockaddr` and `init(storage:)`: the bytes the kernel gets for an endpoint, and
/// the endpoint read back from what it fills in.
final class SockaddrTests: XCTestCase {
    func testIPv4IsWrittenInNetworkOrder() {
        let endpoint = SocketEndpoint(address: IPAddress("192.0.2.10")!, port: 5353)
        endpoint.withSockaddr { address, length in
            XCTAssertEqual(Int(length), MemoryLayout<sockaddr_in>.size)
            let sa = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
            XCTAssertEqual(Int32(sa.sin_family), AF_INET)
            XCTAssertEqual(UInt16(bigEndian: sa.sin_port), 5353)
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            var addr = sa.sin_addr
            XCTAssertNotNil(inet_ntop(AF_INET, &addr, &text, socklen_t(text.count)))
            XCTAssertEqual(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), "192.0.2.10")
        }
    }

    func testIPv6IsWrittenInNetworkOrder() {
        for text in ["2001:db8::1:2", "::ffff:198.51.100.7", "fe80::1234:5678:9abc:def0", "::"] {
            let endpoint = SocketEndpoint(address: IPAddress(text)!, port: 443)
            endpoint.withSockaddr { address, length in
                XCTAssertEqual(Int(length), MemoryLayout<sockaddr_in6>.size)
                let sa = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
                XCTAssertEqual(Int32(sa.sin6_family), AF_INET6)
                XCTAssertEqual(UInt16(bigEndian: sa.sin6_port), 443)
                var parsed = in6_addr()
                XCTAssertEqual(inet_pton(AF_INET6, text, &parsed), 1)
                var written = sa.sin6_addr
                XCTAssertEqual(memcmp(&written, &parsed, MemoryLayout<in6_addr>.size), 0, "\(text)")
            }
        }
    }

    func testAnEndpointSurvivesTheRoundTrip() {
        for endpoint in [SocketEndpoint(address: IPAddress("10.1.2.3")!, port: 1),
                         SocketEndpoint(address: IPAddress("2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff")!, port: 65535)] {
            var storage = sockaddr_storage()
            endpoint.withSockaddr { address, length in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length))) }
            }
            XCTAssertEqual(SocketEndpoint(storage: storage), endpoint)
        }
    }
}
