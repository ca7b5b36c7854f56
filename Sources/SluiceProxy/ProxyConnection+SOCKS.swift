import SluiceLog
import SluiceMux
import SluiceSocks
import SluiceTunnel
import SluiceWire

/// SOCKS5 clients (RFC 1928, RFC 1929 when `--auth-file` is set): CONNECT to an IPv4 or IPv6
/// address or a domain (sent to the relay as a domain, resolved there), and UDP ASSOCIATE.
extension ProxyConnection {
    func advanceSocks() {
        while phase == .socks, !inbound.isEmpty {
            let consumed: Int, step: SocksServerHandshake.Step
            do throws(SocksError) {
                (consumed, step) = try socksHandshake!.receive(inbound.readableBytes)
            } catch {
                return close(reset: true, why: "not SOCKS5: \(error)")
            }
            inbound.consume(consumed)
            switch step {
            case .wait:
                return
            case .send(let bytes):
                guard writeNow(bytes) else { return }
            case .sendAndClose(let bytes, let why):
                Log.info("SOCKS5 client \(peer) refused: \(why)", "proxy")
                _ = writeNow(bytes)
                return close(reset: false, why: nil)
            case .request(let request):
                return handle(request)
            }
        }
    }

    private func handle(_ request: SocksRequest) {
        switch request.command {
        case .connect:
            guard let destination = Self.destination(request.address) else {
                reply(.addressTypeNotSupported)
                return close(reset: false, why: "SOCKS5 CONNECT to \(request.address): not a name the relay can resolve")
            }
            open(destination) { result in
                switch result {
                case .success: return try? SocksReply(code: .succeeded).encoded()
                case .failure(let failure): return try? SocksReply(code: Self.replyCode(failure)).encoded()
                }
            }
        case .udpAssociate:
            do {
                let relay = try SocksUDPRelay(server: server, control: self, client: peer.address,
                                              expectedPort: request.address.port, local: socket.localEndpoint().address)
                guard let bound = try? SocksReply(code: .succeeded, bound: SocksAddress(relay.bound)).encoded(), writeNow(bound) else {
                    return relay.close()
                }
                startUDP(relay)
            } catch {
                Log.warning("SOCKS5 UDP ASSOCIATE from \(peer): \(error)", "proxy")
                reply(.generalFailure)
                close(reset: false, why: nil)
            }
        case .bind:
            reply(.commandNotSupported)
            close(reset: false, why: "SOCKS5 BIND is not supported")
        }
    }

    private func reply(_ code: SocksReplyCode) {
        if let bytes = try? SocksReply(code: code).encoded() { _ = writeNow(bytes) }
    }

    /// The relay's reason for a refused stream, in RFC 1928's words.
    static func replyCode(_ failure: OpenFailure) -> SocksReplyCode {
        switch failure {
        case .unavailable: return .networkUnreachable
        case .refused(.refused): return .connectionRefused
        case .refused(.unreachable), .refused(.timedOut): return .hostUnreachable
        case .refused(.limit): return .notAllowed
        case .refused: return .generalFailure
        }
    }

    /// A SOCKS5 address as a stream destination; nil for a name the protocol cannot carry.
    static func destination(_ address: SocksAddress) -> Destination? {
        switch address.host {
        case .ip(let ip): return Destination(host: .ip(ip), port: address.port)
        case .domain(let bytes):
            let name = String(decoding: bytes, as: UTF8.self)
            guard Destination.isValidDomain(name) else { return nil }
            return Destination(host: .domain(name), port: address.port)
        }
    }
}
